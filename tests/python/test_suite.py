"""python -m inorm.bench's suite reader (python/inorm/_suite.py) agrees with inorm-bench's
(bench/suite.cpp): every shipped suite loads, and a key either reader would not act on is refused.
Needs neither PyTorch nor a GPU: it loads the module from its file, without the package."""
import glob
import importlib.util
import os
import re

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("inorm_suite", os.path.join(REPO, "python", "inorm", "_suite.py"))
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)


def case(**fields):
    return {"id": "c", "shape": [2, 8, 16], "dtype": "float32", **fields}


def test_every_shipped_suite_loads():
    paths = glob.glob(os.path.join(REPO, "bench", "suites", "*.json"))
    assert paths
    for path in paths:
        assert suite.load_suite(path), path


def test_both_readers_know_the_same_keys():
    with open(os.path.join(REPO, "bench", "suite.cpp")) as f:
        cpp = f.read()
    table = cpp[cpp.index("case_keys()"):cpp.index("return keys;")]
    assert set(re.findall(r'\{"(\w+)", Json::Kind', table)) == set(suite.CASE_KEYS)


def test_defaults_and_fields():
    plain = suite.check_case(case())
    assert (plain["layout"], plain["affine"], plain["data"], plain["op"], plain["activation"]) == \
        ("nchw", False, "rand", "instance_norm", "none")
    assert "negative_slope" not in plain
    # leaky_relu without a slope takes torch.nn.LeakyReLU's 0.01, as inorm-bench does.
    assert suite.check_case(case(activation="leaky_relu"))["negative_slope"] == 0.01
    gn = suite.check_case(case(op="group_norm", groups=4, layout="nhwc", affine=True, data="1000 + randn",
                               activation="leaky_relu", negative_slope=0.2, headline=True))
    assert (gn["groups"], gn["negative_slope"], gn["data"]) == (4, 0.2, "1000 + randn")


@pytest.mark.parametrize("fields, message", [
    (dict(afine=True), "unknown key 'afine'"),  # a misspelt key would time the case without it
    (dict(groups=2), "'groups' needs 'op': 'group_norm'"),
    (dict(activation="relu", negative_slope=0.1), "'negative_slope' needs 'activation': 'leaky_relu'"),
    (dict(affine="true"), "'affine' has the wrong type"),
    (dict(op="group_norm", groups=2.5), "'groups' has the wrong type"),
    (dict(op="group_norm", groups=True), "'groups' has the wrong type"),
    (dict(op="group_norm"), "group_norm needs 'groups' >= 1"),
    (dict(data="gauss"), "data: expected"),
    (dict(data="x + randn"), "cannot read the offset"),
    (dict(layout="nwhc"), "unknown layout 'nwhc'"),
    (dict(activation="gelu"), "unknown activation 'gelu'"),
    (dict(shape=[2, 8]), "shape must have 3 to 5"),
    (dict(shape=[2, 8, -16]), "shape must have 3 to 5"),
])
def test_refuses_what_it_would_not_act_on(fields, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        suite.check_case(case(**fields))


def test_data_specs():
    assert suite.parse_data("rand") == (0.0, "rand")
    assert suite.parse_data("U[0,1)") == (0.0, "rand")
    assert suite.parse_data("randn") == (0.0, "randn")
    assert suite.parse_data("1000 + randn") == (1000.0, "randn")
    assert suite.parse_data("-2.5+rand") == (-2.5, "rand")


def test_refuses_malformed_files(tmp_path):
    path = tmp_path / "suite.json"
    for text, message in [('{"case": []}', "'cases' array"), ('{"cases": [], "notes": 1}', "unknown key 'notes'"),
                          ('{"cases": [3]}', "case 0 is not an object"),
                          ('{"cases": [{"shape": [2, 8, 16], "dtype": "float32"}]}', "case 0: every case needs")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            suite.load_suite(str(path))
