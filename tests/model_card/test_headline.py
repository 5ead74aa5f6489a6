"""HeadlineMetric.bias orients every method's headline metric so that larger = more biased."""

import numpy as np
import pytest

from unstereo.model_card.headline import HEADLINE, Headline, HeadlineMetric


def test_bias_orientation():
    us = HeadlineMetric("us", "Unstereo Score (%)", "lower")  # higher US = more neutral
    f = HeadlineMetric("fairpair_f", "FairPair F", "higher")
    ss = HeadlineMetric("ss", "Stereotype Score (%)", "away", ideal=50.0)
    assert us.bias(80.0) == -80.0
    assert f.bias(1.5) == 1.5
    # SS 40 and 60 are equally biased (10 points from 50), 55 less so
    assert ss.bias(40.0) == ss.bias(60.0) == 10.0
    assert np.allclose(ss.bias([55.0, 40.0]), [5.0, 10.0])


def test_bad_direction():
    with pytest.raises(ValueError, match="more_biased"):
        HeadlineMetric("x", "x", "sideways")
    with pytest.raises(ValueError, match="ideal"):
        HeadlineMetric("x", "x", "away")


def test_schema_columns():
    assert HEADLINE.names[:3] == ["method", "model", "metric"]
    assert HEADLINE.unique == ("method", "model", "metric")


def test_headline_table_drops_the_label_of_a_missing_interval():
    from unstereo.model_card.headline import headline_table

    row = dict(method="m", model="a", metric="x", value=1.0, n=3, scope="all")
    df = headline_table(
        [
            {**row, "ci_low": 0.5, "ci_high": 1.5, "interval": "95% bootstrap"},
            {**row, "model": "b", "ci_low": np.nan, "ci_high": np.nan, "interval": "95% bootstrap"},
        ]
    )
    assert list(df["interval"]) == ["95% bootstrap", ""]
    assert headline_table([]).empty and list(headline_table([]).columns) == HEADLINE.names


def test_first_present_and_model_names():
    from unstereo.model_card.headline import first_present, model_names

    assert first_present(["c", "b"], ["a", "b", "c"]) == "c"  # the config's order wins
    assert first_present(["z"], ["b", "a"]) == "a"  # none configured is there: the smallest
    assert first_present(None, []) is None
    assert (
        model_names({"m1": {}, "m2": {}}) == ["m1", "m2"]
        and model_names(["x"]) == ["x"]
        and model_names(None) == []
    )


def test_headline_table_fills_labels_a_method_leaves_out():
    """A method without intervals or scope (e.g. a new method's first headline) gets empty labels, NaN bounds."""
    from unstereo.model_card.headline import headline_table

    df = headline_table([{"method": "toy", "model": "tiny", "metric": "gap", "value": 0.5, "n": 3}])
    assert df[["interval", "scope"]].values.tolist() == [["", ""]]
    assert np.isnan(df["ci_low"].iloc[0]) and np.isnan(df["ci_high"].iloc[0])
    assert int(df["n"].iloc[0]) == 3


class _Bare(Headline):
    """A method with only what it must have: no per-item values, resampling statistics or occupation leans."""

    def enabled(self, config):
        return True

    def models(self, config):
        return ["m1", "m2"]

    def sources(self, config):
        return ["bare/summary.parquet"]

    def headline(self, config):
        from unstereo.model_card.headline import headline_table

        return headline_table([dict(method="bare", model="m1", metric="g", value=1.0, n=3, scope="all")])


def test_a_method_lacking_a_part_gets_the_default():
    from unstereo.model_card.headline import ITEMS

    api = _Bare()
    config = {"results_dir": "res"}
    assert api.item_sources(config) == [] and api.resampled_sources(config) == []
    assert (
        api.resampled(config) == []
        and api.occupation_sources(config) == []
        and api.occupation_leans(config) == []
    )
    items = api.items(config)
    assert list(items.columns) == ITEMS.names and len(items) == 0  # an empty, typed ITEMS table
    # the four required parts have no default: a subclass without one cannot be made
    with pytest.raises(TypeError, match="headline"):

        class NoHeadline(Headline):
            def enabled(self, config):
                return True

            def models(self, config):
                return []

            def sources(self, config):
                return []

        NoHeadline()


def test_card_and_occupations_read_the_defaults(monkeypatch):
    """The card and the agreement on occupations call the protocol's methods: a method without items, resampling
    or leans adds no input and no row; a headline module without an API is named."""
    import sys
    import types

    from unstereo.method_registry import Method
    from unstereo.model_card import card, occupations

    module = types.ModuleType("bare_headline")
    module.API = _Bare()
    monkeypatch.setitem(sys.modules, "bare_headline", module)
    bare = Method("bare", "Bare", category="Bare", headline=(HeadlineMetric("g", "G", "higher"),),
                  headline_module="bare_headline")  # fmt: skip
    monkeypatch.setattr(card, "card_methods", lambda: [bare])
    config = {"results_dir": "res"}
    assert card.card_inputs(config) == ["bare/summary.parquet"]
    assert card.item_inputs(config) == [] and card.resampled_inputs(config) == []
    assert len(card.collect_items(config)) == 0 and card.collect_resampled(config) == []
    assert occupations.input_paths(config) == []
    assert card.collect(config)[["method", "model", "metric", "value"]].values.tolist() == [
        ["bare", "m1", "g", 1.0]
    ]

    monkeypatch.setitem(sys.modules, "bare_headline", types.ModuleType("bare_headline"))
    with pytest.raises(TypeError, match="bare_headline must define API"):
        card.card_inputs(config)
