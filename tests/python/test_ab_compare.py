"""scripts/ab_compare.py, which tabulates scripts/ab-bench.sh's runs: each row's times old -> new a
round and the range of new / old, a row either build did not check against float64 marked, and a
round one build did not finish left out. Needs neither PyTorch nor a GPU."""
import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "ab_compare.py")


def write_run(folder, name, rows):
    (folder / f"{name}.json").write_text(json.dumps(rows))


def row(case, ms, verified=True, layout="nhwc"):
    return {"id": case, "shape": "2x8x4x4", "dtype": "bfloat16", "layout": layout, "inorm_ms": ms,
            "verified": verified}


def compare(folder, *args):
    done = subprocess.run([sys.executable, SCRIPT, str(folder), *args], capture_output=True, text=True)
    return done.returncode, done.stdout


def test_ratios_rounds_and_unchecked_rows(tmp_path):
    write_run(tmp_path, "fused-backward-old-1", [row("a", 0.010), row("b", 0.020, layout="nchw")])
    write_run(tmp_path, "fused-backward-new-1", [row("a", 0.009), row("b", 0.022, verified=False, layout="nchw")])
    write_run(tmp_path, "fused-backward-old-2", [row("a", 0.010), row("b", 0.020, layout="nchw")])
    write_run(tmp_path, "fused-backward-new-2", [row("a", 0.0095), row("b", 0.021, layout="nchw")])
    write_run(tmp_path, "fused-backward-old-3", [row("a", 0.010)])  # its new run was cut off
    rc, out = compare(tmp_path)
    assert rc == 0
    lines = out.splitlines()
    assert "## fused, backward (us, old -> new a round; new / old)" in lines
    assert "| case | shape, dtype | round 1 | round 2 | new / old |" in lines
    assert "| a | 2x8x4x4 bfloat16 | 10.00 -> 9.00 | 10.00 -> 9.50 | 0.900-0.950 |" in lines
    assert "| b | 2x8x4x4 bfloat16 | 20.00 -> 22.00 | 20.00 -> 21.00 | 1.050-1.100 | NOT CHECKED" in lines
    rc, out = compare(tmp_path, "--layout", "nhwc")
    assert "| a |" in out and "| b |" not in out


def test_a_folder_without_runs_fails(tmp_path):
    (tmp_path / "steps.txt").write_text("rc=0 build 200 s\n")
    rc, out = compare(tmp_path)
    assert rc == 1 and out == ""
