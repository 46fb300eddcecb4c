"""Benchmark suite files (bench/suites/*.json) for python -m inorm.bench. Imports nothing but the
standard library, so the suites are checked where PyTorch is not installed.

A key outside CASE_KEYS, or one that means nothing to its case ("groups" without group_norm,
"negative_slope" without leaky_relu), is refused rather than ignored: the run would otherwise time
some other case than the one the file describes. inorm-bench's reader (bench/suite.cpp) holds the
same list."""
import json

# Each key a case may carry and the JSON type of its value; "headline" marks the suites' headline rows.
CASE_KEYS = {"id": str, "shape": list, "dtype": str, "layout": str, "affine": bool, "data": str, "op": str,
             "groups": int, "activation": str, "negative_slope": (int, float), "headline": bool}
DTYPES = ("float32", "float16", "bfloat16", "float64")
LAYOUTS = ("nchw", "nhwc")
OPS = ("instance_norm", "group_norm")
ACTIVATIONS = ("none", "relu", "leaky_relu", "silu")
# What a case leaves out: torch.nn's defaults on contiguous U[0,1) data.
DEFAULTS = {"layout": "nchw", "affine": False, "data": "rand", "op": "instance_norm", "activation": "none"}


def parse_data(spec):
    """A data spec, "rand" (U[0,1), also "U[0,1)"), "randn" or "<offset> + rand[n]", as (offset, kind)."""
    offset, plus, kind = spec.replace(" ", "").rpartition("+")
    kind = "rand" if kind == "U[0,1)" else kind
    if kind not in ("rand", "randn"):
        raise ValueError(f"data: expected 'rand', 'randn' or '<offset> + randn', got {spec!r}")
    try:
        return (float(offset) if plus else 0.0), kind
    except ValueError:
        raise ValueError(f"data: cannot read the offset in {spec!r}") from None


def _is(value, kind):
    # bool is an int in Python: a boolean is no count or number here.
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def check_case(case, index=0):
    """The case with its defaults filled in; ValueError naming the case and the problem otherwise."""
    if not isinstance(case, dict):
        raise ValueError(f"case {index} is not an object")
    name = case["id"] if isinstance(case.get("id"), str) else f"case {index}"
    for key, value in case.items():
        if key not in CASE_KEYS:
            raise ValueError(f"{name}: unknown key {key!r}")
        if not _is(value, CASE_KEYS[key]):
            raise ValueError(f"{name}: {key!r} has the wrong type ({type(value).__name__})")
    if not all(key in case for key in ("id", "shape", "dtype")):
        raise ValueError(f"{name}: every case needs 'id', 'shape' and 'dtype'")
    if not 3 <= len(case["shape"]) <= 5 or not all(_is(d, int) and d >= 0 for d in case["shape"]):
        raise ValueError(f"{name}: shape must have 3 to 5 whole sizes >= 0 (N, C, spatial)")
    case = {**DEFAULTS, **case}
    for key, allowed in (("dtype", DTYPES), ("layout", LAYOUTS), ("op", OPS), ("activation", ACTIVATIONS)):
        if case[key] not in allowed:
            raise ValueError(f"{name}: unknown {key} {case[key]!r} (one of {', '.join(allowed)})")
    parse_data(case["data"])
    if case["op"] == "group_norm" and case.get("groups", 0) < 1:
        raise ValueError(f"{name}: group_norm needs 'groups' >= 1")
    if case["op"] != "group_norm" and "groups" in case:
        raise ValueError(f"{name}: 'groups' needs 'op': 'group_norm'")
    if case["activation"] == "leaky_relu":
        case.setdefault("negative_slope", 0.01)
    elif "negative_slope" in case:
        raise ValueError(f"{name}: 'negative_slope' needs 'activation': 'leaky_relu'")
    return case


def load_suite(path):
    """The cases of a suite file, each checked and with its defaults filled in."""
    with open(path) as f:
        suite = json.load(f)
    if not isinstance(suite, dict) or not isinstance(suite.get("cases"), list):
        raise ValueError(f"{path}: expected an object with a 'cases' array")
    unknown = set(suite) - {"about", "cases"}
    if unknown:
        raise ValueError(f"{path}: unknown key {sorted(unknown)[0]!r} (a suite has 'about' and 'cases')")
    try:
        return [check_case(case, index) for index, case in enumerate(suite["cases"])]
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
