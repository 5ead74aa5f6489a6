"""Model variants: models derived from a base model by a named intervention at a strength (counterfactual data
augmentation, Huang et al.'s embedding and sentiment regularisation, and a control fine-tune), written once as Hugging
Face folders under ``{results_dir}/variants/`` that every method can name as ``{variant: NAME}``."""
