"""The cross-method model card: each method's headline metrics, stacked and ranked."""
