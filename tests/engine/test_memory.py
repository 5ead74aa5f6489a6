"""How much memory the engine may take (unstereo.engine.memory): the system's and the process's cgroup's room."""

from __future__ import annotations

from unstereo.engine import memory


def cgroup_tree(tmp_path, proc_lines, files):
    proc = tmp_path / "cgroup"
    proc.write_text("\n".join(proc_lines) + "\n")
    for rel, text in files.items():
        f = tmp_path / "fs" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text + "\n")
    return str(proc), str(tmp_path / "fs")


def test_cgroup_v2_limit_less_usage(tmp_path):
    proc, root = cgroup_tree(tmp_path, ["0::/slurm/job_7/step_0"],
                             {"slurm/job_7/step_0/memory.max": "8000000000",
                              "slurm/job_7/step_0/memory.current": "6500000000"})  # fmt: skip
    assert memory.cgroup_room(proc, root) == 1_500_000_000


def test_cgroup_v1_memory_controller(tmp_path):
    proc, root = cgroup_tree(tmp_path, ["5:cpu,cpuacct:/x", "4:memory:/job", "0::/"],
                             {"memory/job/memory.limit_in_bytes": "4096",
                              "memory/job/memory.usage_in_bytes": "5000"})  # fmt: skip
    assert memory.cgroup_room(proc, root) == 0  # over its limit already: no room, never negative


def test_no_limit_or_nothing_readable_is_none(tmp_path):
    proc, root = cgroup_tree(tmp_path, ["0::/a"], {"a/memory.max": "max", "a/memory.current": "10"})
    assert memory.cgroup_room(proc, root) is None
    proc, root = cgroup_tree(tmp_path, ["4:memory:/b"],
                             {"memory/b/memory.limit_in_bytes": "9223372036854771712",
                              "memory/b/memory.usage_in_bytes": "10"})  # fmt: skip
    assert memory.cgroup_room(proc, root) is None  # v1's "no limit" is a number near 2**63
    assert memory.cgroup_room(str(tmp_path / "missing"), root) is None
    proc, root = cgroup_tree(tmp_path, ["0::/c"], {})  # no memory files in the folder
    assert memory.cgroup_room(proc, root) is None


def test_available_is_the_smaller_of_the_system_and_the_cgroup(monkeypatch):
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 20_000)
    monkeypatch.setattr(memory, "cgroup_room", lambda: 3_000)
    assert memory.available_bytes() == 3_000
    monkeypatch.setattr(memory, "cgroup_room", lambda: None)
    assert memory.available_bytes() == 20_000
    monkeypatch.setattr(memory, "_meminfo_available", lambda: None)
    assert memory.available_bytes() is None
