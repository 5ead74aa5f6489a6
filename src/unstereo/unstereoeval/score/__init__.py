"""UnStereoEval's score stage: `unstereo score`, its rule helpers, rules, env, schema and captions."""
