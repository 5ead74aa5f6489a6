# One rule per offline resource (unstereo.resources): idempotent, checksummed, into config["external_dir"].

import re

from unstereo.resources import RESOURCES


rule fetch_resource:
    """Obtain an offline resource (model GGUF, demo corpus, WordNet, lid.176, reference data)."""
    output:
        manifest=resource_manifest("{resource}"),
    log:
        f"{LOGS}/resources/{{resource}}.log",
    wildcard_constraints:
        resource="|".join(map(re.escape, RESOURCES)),
    priority: lambda wc: rule_priority("fetch_resource", wc.resource)
    conda:
        "../envs/resources.yaml"
    # Copying/downloading and checksumming: one core; memory holds one file block plus the interpreter; a retry
    # (--retries) gets 1.5x the memory and twice the time (the reference download can be slow).
    threads: 1
    resources:
        mem_mb=mem_mb_for(base=2000),
        runtime=runtime_for(base=30, cap=240),
    params:
        mirror=lambda wc: mirror_option() if wc.resource == "reference" else "",
        external_dir=lambda wc, output: Path(output.manifest).parent.parent,
        # a changed definition (e.g. a dataset added to the reference) reruns the fetch of existing copies
        version=lambda wc: RESOURCES[wc.resource].version,
    # On failure the error's first line (what to set or install) goes to the terminal too, not only to the log.
    shell:
        "unstereo resources fetch {wildcards.resource} --external-dir {params.external_dir} {params.mirror} > {log} 2>&1 "
        "|| {{ grep -m1 '^unstereo: error:' {log} >&2; echo 'full log: {log}' >&2; exit 1; }}"


ALL_TARGETS.extend(resource_manifest(name) for name in config["resources"])
