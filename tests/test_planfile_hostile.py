"""Hostile plan files: every one is refused with a tilemem error naming the file and the line of
the offending key (or its table's header when the key is missing), or gives the exact plan.

Line numbers are counted by hand in BASE below (its comments number the lines)."""

import codecs
import warnings

import pytest

from tilemem import SMEMPool, TMEMPool
from tilemem.errors import (
    AllocationError,
    DTypeError,
    LayoutError,
    PlanFileError,
    SwizzleError,
    TargetError,
    TilememError,
    TMEMOverflowError,
)
from tilemem.planfile import load_plan, parse_plan_file

BASE = """\
target = "sm_100a"
threads = 1024
[smem]
name = "smem"
phases = ["mainloop", "epilogue"]
[[smem.buffers]]
kind = "mma"
name = "A"
live = "mainloop"
shape = [2, 128, 64]
dtype = "bfloat16"
swizzle_mode = "128B"
[[smem.buffers]]
name = "bar"
shape = [2]
dtype = "uint64"
align = 8
[[tmem]]
name = "t"
total_cols = 256
cta_group = 1
alloc_warp = 1
[[tmem.buffers]]
name = "acc"
shape = [128, 256]
dtype = "float32"
datapath = "D"
[[tmem.stages]]
buffer = "acc"
col_start = 0
width = 128
stages = 2
"""
# the line of each `key = value` of BASE, by hand (1-based), and its table's header line
LINE = {
    "target": 1,
    "threads": 2,
    "smem.name": 4,
    "phases": 5,
    "A.kind": 7,
    "A.name": 8,
    "A.live": 9,
    "A.shape": 10,
    "A.dtype": 11,
    "A.swizzle_mode": 12,
    "bar.name": 14,
    "bar.shape": 15,
    "bar.dtype": 16,
    "bar.align": 17,
    "t.name": 19,
    "t.total_cols": 20,
    "t.cta_group": 21,
    "t.alloc_warp": 22,
    "acc.name": 24,
    "acc.shape": 25,
    "acc.dtype": 26,
    "acc.datapath": 27,
    "view.buffer": 29,
    "view.col_start": 30,
    "view.width": 31,
    "view.stages": 32,
}
HEADER = {"A": 6, "bar": 13, "t": 18, "acc": 23, "view": 28, "smem": 3}
WHAT = {
    "A": "[[smem.buffers]] #1 'A'",
    "bar": "[[smem.buffers]] #2 'bar'",
    "t": "[[tmem]] #1",
    "acc": "[[tmem.buffers]] #1 of 't' 'acc'",
    "view": "[[tmem.stages]] #1 of 't'",
    "smem": "[smem]",
}


def set_line(text: str, line: int, new: str) -> str:
    """``text`` with its ``line``-th line (1-based) replaced by ``new``."""
    lines = text.splitlines()
    lines[line - 1] = new
    return "\n".join(lines) + "\n"


def drop_line(text: str, line: int) -> str:
    lines = text.splitlines()
    del lines[line - 1]
    return "\n".join(lines) + "\n"


def refused(text: str, cls=PlanFileError) -> str:
    with pytest.raises(cls) as info:
        parse_plan_file(text, "k.toml")
    if cls is not TilememError:
        assert type(info.value) is cls  # the class itself, not a subclass that happens to fit
    return str(info.value)


def base_python_plan():
    """BASE built by the Python calls it stands for."""
    smem = SMEMPool(name="smem", target="sm_100a", threads=1024, phases=("mainloop", "epilogue"))
    smem.alloc_mma((2, 128, 64), "bfloat16", "128B", name="A", live="mainloop")
    smem.alloc((2,), "uint64", align=8, name="bar")
    tmem = TMEMPool(smem, 256, cta_group=1, alloc_warp=1, name="t")  # its slot after bar
    acc = tmem.alloc((128, 256), "float32", datapath="D", name="acc")
    tmem.stages(acc, 0, 128, 2)
    smem.commit()
    tmem.commit()
    return smem.plan()


def test_base_is_the_python_plan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_plan_file(BASE, "k.toml").build().plan() == base_python_plan()


# -- a key of the wrong TOML type: refused at that key's line, before any pool call ------------

# (TOML value, words the message must hold)
WRONG_VALUES = [
    ("2.0", ["is a float", "write 2"]),
    ("2.5", ["is a float", "must be an integer"]),
    ("nan", ["is a float", "must be an integer"]),
    ("inf", ["is a float", "must be an integer"]),
    ("{ a = 1 }", ["is a table", "takes no table"]),
    ("1979-05-27", ["1979-05-27", "date or time"]),
    ("07:32:00", ["07:32:00", "date or time"]),
]
ARGUMENT_KEYS = [
    "A.shape",
    "A.dtype",
    "A.swizzle_mode",
    "A.live",
    "bar.align",
    "bar.shape",
    "t.total_cols",
    "t.cta_group",
    "t.alloc_warp",
    "acc.shape",
    "acc.datapath",
    "view.col_start",
    "view.width",
    "view.stages",
]


@pytest.mark.parametrize("value,words", WRONG_VALUES, ids=[v for v, _ in WRONG_VALUES])
@pytest.mark.parametrize("key", ARGUMENT_KEYS)
def test_wrong_toml_type_is_refused_at_its_key(key, value, words):
    table, name = key.split(".")
    message = refused(set_line(BASE, LINE[key], f"{name} = {value}"))
    assert message.startswith(f"k.toml:{LINE[key]}: {WHAT[table]}: {name}")
    for word in words:
        assert word in message


@pytest.mark.parametrize("key", ["A.shape", "bar.shape", "acc.shape"])
def test_a_float_inside_an_array_is_refused(key):
    table, name = key.split(".")
    message = refused(set_line(BASE, LINE[key], f"{name} = [2, 64.0]"))
    assert message.startswith(f"k.toml:{LINE[key]}: {WHAT[table]}: shape holds 64.0, a float")
    assert "write 64" in message


def test_cta_group_float_is_refused_not_kept():
    # TMEMPool(cta_group=2.0) would keep a float and export `cta_group = 2.0`
    message = refused(set_line(BASE, 21, "cta_group = 2.0"))
    assert message == "k.toml:21: [[tmem]] #1: cta_group = 2.0 is a float; write 2"


def test_live_table_is_refused_with_the_array_it_means():
    # read as both phases before: {mainloop = false, epilogue = true} means epilogue only
    message = refused(set_line(BASE, 9, "live = {mainloop = false, epilogue = true}"))
    assert message.startswith("k.toml:9: [[smem.buffers]] #1 'A': live = ")
    assert message.endswith('write the phases it is live in as an array: ["epilogue"]')


# -- keys the loader reads itself: top-level and structural ---------------------------------

TOP_WRONG = [
    ("target = 5", "target must be a string, got int 5"),
    ('target = ["sm_100a"]', "target must be a string, got an array"),
    ('threads = "256"', "threads must be an integer, got str '256'"),
    ("threads = true", "threads must be an integer, got bool True"),
    ("threads = 1.5", "threads must be an integer, got float 1.5"),
    ("threads = 256.0", "threads must be an integer, got float 256.0"),
    ("name = 5", "name must be a string, got int 5"),
    ("summary = [1]", "summary must be a string, got an array [1]"),
    ("summary = { a = 1 }", "summary must be a string, got a table"),
    ('schema = "1"', "schema must be an integer, got str '1'"),
    ("schema = 1.0", "schema must be an integer, got float 1.0"),
    ("schema = 2", "schema = 2; this tilemem reads schema 1"),
    ("schema = 0", "schema = 0; this tilemem reads schema 1"),
    ("smem = 5", "smem must be the table [smem], got int"),
    ("smem = [1]", "smem must be the table [smem], got an array"),
    ("tmem = [1]", "tmem must be [[tmem]] tables (an array of tables), got int 1"),
    ("tmem = 5", "tmem must be [[tmem]] tables (an array of tables), got int 5"),
    ('tmem = "t"', "tmem must be [[tmem]] tables (an array of tables), got str 't'"),
    ("tmem = [[1]]", "tmem must be [[tmem]] tables (an array of tables), got an array [1]"),
    (
        "tmem = [{ total_cols = 32 }, 7]",
        "tmem must be [[tmem]] tables (an array of tables), got int 7",
    ),
    ("size = 4", "top level: unknown key 'size'"),
]


@pytest.mark.parametrize("line_text,expected", TOP_WRONG)
def test_top_level_key_of_the_wrong_type(line_text, expected):
    # the bad key on line 3, after two good ones
    message = refused(f'target = "sm_100a"\n# a comment\n{line_text}\n')
    if line_text.startswith("target"):
        message = refused(f"{line_text}\n# a comment\nthreads = 32\n")
        assert message.startswith("k.toml:1: ") and expected in message
    else:
        assert message.startswith("k.toml:3: ") and expected in message


HEAD = 'target = "sm_100a"\nthreads = 1024\n'
STRUCTURE = [
    # (text after HEAD, expected line, expected message part)
    (
        "[smem]\nbuffers = 5",
        4,
        "[smem]: buffers must be [[smem.buffers]] tables (an array of tables), got int 5",
    ),
    (
        "[smem]\nbuffers = ['A']",
        4,
        "[smem]: buffers must be [[smem.buffers]] tables (an array of tables), got str 'A'",
    ),
    ("[smem]\nbuffers = [1, 2]", 4, "got int 1"),
    ("[smem]\nbuffers = true", 4, "got bool True"),
    ("[smem]\nbuffers = [[1]]", 4, "got an array [1]"),
    ("[smem]\nbuffers = 'x'", 4, "got str 'x'"),
    (
        "[smem.buffers]\nname = 'A'\nshape = [4]",
        3,
        "[smem.buffers] is one table; write [[smem.buffers]]",
    ),
    (
        "[smem]\n[smem.buffers]\nshape = [4]",
        4,
        "[smem.buffers] is one table; write [[smem.buffers]]",
    ),
    ("[tmem]\ntotal_cols = 32", 3, "[tmem] is one table; write [[tmem]]"),
    (
        "[[tmem]]\ntotal_cols = 32\n[tmem.stages]\nwidth = 2",
        5,
        "[tmem.stages] is one table; write [[tmem.stages]]",
    ),
    (
        "[[tmem]]\ntotal_cols = 32\n[tmem.buffers]\nshape = [128, 32]",
        5,
        "[tmem.buffers] is one table; write [[tmem.buffers]]",
    ),
    (
        "[[tmem]]\ntotal_cols = 32\nbuffers = [1]",
        5,
        "[[tmem]] 'tmem': buffers must be [[tmem.buffers]] tables",
    ),
    (
        "[[tmem]]\ntotal_cols = 32\nstages = 'acc'",
        5,
        "[[tmem]] 'tmem': stages must be [[tmem.stages]] tables",
    ),
    (
        "[[smem.buffers]]\nmove_base_to = 1.0",
        4,
        "[[smem.buffers]] #1: move_base_to = 1.0 is a float; write 1",
    ),
    (
        "[[smem.buffers]]\nmove_base_to = -8",
        4,
        "[[smem.buffers]] #1: move_base_to offset (bytes) must be",
    ),
    (
        "[[smem.buffers]]\nmove_base_to = 'x'",
        4,
        "[[smem.buffers]] #1: move_base_to offset (bytes) must be",
    ),
    (
        "[[smem.buffers]]\nslot_of = 3",
        4,
        "[[smem.buffers]] #1: slot_of must be a string, got int 3",
    ),
    (
        "[[smem.buffers]]\nslot_of = 'x'",
        4,
        "[[smem.buffers]] #1: slot_of = 'x' names no [[tmem]] pool",
    ),
    ("[smem]\ncommit = 1.5", 4, "[smem]: commit = 1.5 is a float: it must be an integer"),
    ("[smem]\ncommit = 'all'", 4, "[smem]: commit size (bytes) must be an integer"),
    (
        "[smem]\nphases = { a = 1 }",
        4,
        "[smem]: phases = {'a': 1} is a table; phases takes no table",
    ),
]


@pytest.mark.parametrize("text,line,expected", STRUCTURE)
def test_file_structure_errors(text, line, expected):
    message = refused(HEAD + text + "\n", TilememError)
    assert message.startswith(f"k.toml:{line}: ") and expected in message


# -- missing keys: the table's header line, the key named ------------------------------------

MISSING = [
    ("A.shape", "A", "'shape'", "SMEMPool.alloc_mma"),
    ("bar.shape", "bar", "'shape'", "SMEMPool.alloc"),
    ("acc.shape", "acc", "'shape'", "TMEMPool.alloc"),
    ("view.col_start", "view", "'col_start'", "TMEMPool.stages"),
    ("view.width", "view", "'width'", "TMEMPool.stages"),
]


@pytest.mark.parametrize("key,table,name,owner", MISSING)
def test_missing_required_key_is_named(key, table, name, owner):
    message = refused(drop_line(BASE, LINE[key]))
    what = WHAT[table]
    assert message.startswith(f"k.toml:{HEADER[table]}: {what}: needs the key {name}")
    assert owner in message


def test_stage_view_without_buffer_is_a_plan_file_error():
    # deleting this check would leave a KeyError
    message = refused(drop_line(BASE, 29))
    assert message == (
        "k.toml:28: [[tmem.stages]] #1 of 't': needs buffer = the name of the TMEM buffer it views"
    )


SF = """\
target = "sm_100a"
threads = 1024
[[tmem]]
total_cols = 128
[[tmem.buffers]]
kind = "sf"
name = "SFA"
shape = [2, 128, 16]
dtype = "float8_e4m3fn"
sf_per_mma = 4
"""


def test_scale_factor_buffer_without_sf_per_mma():
    message = refused(drop_line(SF, 10))
    assert message.startswith("k.toml:5: [[tmem.buffers]] #1 of 'tmem' 'SFA': needs the key")
    assert "'sf_per_mma'" in message and "TMEMPool.alloc_sf" in message


def test_scale_factor_file_is_the_python_plan():
    smem = SMEMPool(target="sm_100a", threads=1024)
    tmem = TMEMPool(smem, 128)
    tmem.alloc_sf((2, 128, 16), "float8_e4m3fn", sf_per_mma=4, name="SFA")
    smem.commit()
    tmem.commit()
    assert parse_plan_file(SF, "k.toml").build().plan() == smem.plan()


# -- typos: did you mean ------------------------------------------------------------------------

TYPOS = [
    (LINE["A.shape"], "shap = [2, 128, 64]", "A", "shap", "shape"),
    (LINE["A.dtype"], "dtyp = 'bfloat16'", "A", "dtyp", "dtype"),
    (LINE["A.swizzle_mode"], "swizzle = '128B'", "A", "swizzle", "swizzle_mode"),
    (LINE["A.live"], "lives = 'mainloop'", "A", "lives", "live"),
    (LINE["bar.align"], "alignment = 8", "bar", "alignment", "align"),
    (LINE["bar.shape"], "shapes = [2]", "bar", "shapes", "shape"),
    (LINE["t.total_cols"], "total_col = 256", "t", "total_col", "total_cols"),
    (LINE["t.cta_group"], "ctagroup = 1", "t", "ctagroup", "cta_group"),
    (LINE["t.alloc_warp"], "alloc_warps = 1", "t", "alloc_warps", "alloc_warp"),
    (LINE["acc.datapath"], "data_path = 'D'", "acc", "data_path", "datapath"),
    (LINE["acc.dtype"], "dtpye = 'float32'", "acc", "dtpye", "dtype"),
    (LINE["view.col_start"], "colstart = 0", "view", "colstart", "col_start"),
    (LINE["view.width"], "widht = 128", "view", "widht", "width"),
    (LINE["view.buffer"], "bufer = 'acc'", "view", "bufer", "buffer"),
    (LINE["phases"], "phase = ['mainloop', 'epilogue']", "smem", "phase", "phases"),
]


@pytest.mark.parametrize("line,text,table,typo,meant", TYPOS)
def test_typo_gets_did_you_mean_at_its_line(line, text, table, typo, meant):
    message = refused(set_line(BASE, line, text))
    unnamed = {
        "A": "[[smem.buffers]] #1",
        "bar": "[[smem.buffers]] #2",
        "acc": "[[tmem.buffers]] #1 of 't'",
    }
    what = unnamed.get(table, WHAT[table])  # the name is not read before the keys are checked
    assert message.startswith(
        f"k.toml:{line}: {what}: unknown key {typo!r}; did you mean {meant!r}?"
    )


def test_top_level_typo():
    message = refused(set_line(BASE, 2, "thread = 1024"))
    assert message.startswith("k.toml:2: top level: unknown key 'thread'; did you mean 'threads'?")


def test_kind_typo_and_kind_of_the_wrong_type():
    message = refused(set_line(BASE, 7, 'kind = "mmma"'))
    assert message.startswith("k.toml:7: [[smem.buffers]] #1: kind = 'mmma'")
    assert message.endswith("did you mean 'mma'?")
    message = refused(set_line(BASE, 7, "kind = ['mma']"))  # unhashable: a TypeError before
    assert message.startswith("k.toml:7: [[smem.buffers]] #1: kind = ['mma']; SMEM buffers are")


def test_buffer_name_typo_in_a_stage_view():
    message = refused(set_line(BASE, 29, 'buffer = "acx"'))
    assert message == (
        "k.toml:29: [[tmem.stages]] #1 of 't': buffer = 'acx' names no buffer defined above; "
        "did you mean 'acc'?; defined: A, bar, acc"
    )


def test_slot_of_typo():
    text = BASE.replace('[[smem.buffers]]\nname = "bar"', '[[smem.buffers]]\nslot_of = "tt"', 1)
    text = text.replace('shape = [2]\ndtype = "uint64"\nalign = 8\n', "")
    message = refused(text)
    assert message.startswith("k.toml:14: [[smem.buffers]] #2: slot_of = 'tt' names no [[tmem]]")
    assert "did you mean 't'?" in message


# -- stage views and pool names ----------------------------------------------------------------


def test_stage_view_over_an_smem_buffer():
    message = refused(set_line(BASE, 29, 'buffer = "bar"'))
    assert message == (
        "k.toml:29: [[tmem.stages]] #1 of 't': buffer = 'bar' is a buffer of the SMEM pool: "
        "stage views split the columns of a TMEM buffer"
    )


def test_stage_view_over_another_tmem_pools_buffer():
    text = BASE.replace("[[tmem.stages]]", '[[tmem]]\nname = "u"\ntotal_cols = 32\n[[tmem.stages]]')
    message = refused(text)
    assert message.startswith("k.toml:32: [[tmem.stages]] #1 of 'u': buffer = 'acc' is a buffer")
    assert "TMEM pool 't': list its views under that [[tmem]]" in message


@pytest.mark.parametrize("value", ["5", "['acc']", "true"])
def test_stage_view_buffer_of_the_wrong_type(value):
    message = refused(set_line(BASE, 29, f"buffer = {value}"))
    assert message.startswith("k.toml:29: [[tmem.stages]] #1 of 't': buffer must be a string")


def test_two_tmem_pools_with_one_name():
    text = BASE + '[[tmem]]\nname = "t"\ntotal_cols = 32\n'  # lines 33-35
    message = refused(text, AllocationError)
    assert message.startswith("k.toml:34: [[tmem]] #2: TMEM pool name 't' is taken")


def test_smem_and_tmem_pool_with_one_name():
    message = refused(set_line(BASE, 19, 'name = "smem"'), AllocationError)
    assert message.startswith("k.toml:19: [[tmem]] #1: TMEM pool name 'smem' is taken")


def test_two_unnamed_tmem_pools_get_two_names():
    text = (
        'target = "sm_100a"\nthreads = 1024\n[[tmem]]\ntotal_cols = 32\n[[tmem]]\ntotal_cols = 32\n'
    )
    plan = parse_plan_file(text, "k.toml").build().plan()
    names = [p.name for p in plan.pools]
    assert len(set(names)) == len(names) == 3


# -- threads ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value,limit", [(-1, 1024), (0, 1024), (1025, 1024), (2048, 1024)])
def test_threads_out_of_range(value, limit):
    message = refused(set_line(BASE, 2, f"threads = {value}"))
    assert message == (
        f"k.toml:2: threads = {value}: threads per CTA must be in [1, {limit}] on sm_100a"
    )


@pytest.mark.parametrize("value", [704, 1000, 1024])
def test_threads_in_range_reach_the_plan(tmp_path, value):
    path = tmp_path / "k.toml"
    path.write_text(set_line(BASE, 2, f"threads = {value}"))
    assert load_plan(path).threads == value


def test_threads_disagreeing_with_smem_threads():
    text = BASE.replace('[smem]\nname = "smem"', '[smem]\nname = "smem"\nthreads = 512')
    message = refused(text)
    assert message == (
        "k.toml:2: threads = 1024 disagrees with [smem] threads = 512 (line 5); give it once"
    )


def test_threads_below_the_alloc_warp_are_refused_by_the_pool():
    # 32 threads are warp 0 alone: alloc_warp = 1 would never run tcgen05.alloc
    message = refused(set_line(BASE, 2, "threads = 32"), AllocationError)
    assert message.startswith("k.toml:22: [[tmem]] #1: alloc_warp=1 is outside the block")


def test_threads_agreeing_with_smem_threads_is_accepted(tmp_path):
    path = tmp_path / "k.toml"
    path.write_text(BASE.replace('[smem]\nname = "smem"', '[smem]\nname = "smem"\nthreads = 1024'))
    assert load_plan(path).threads == 1024


def test_top_level_threads_reach_the_tmem_residency_check():
    # 64 KiB of SMEM alone would let 3 CTAs share an SM, 3 x 256 columns > 512: a warning;
    # 1024 threads per CTA allow only 2 (2048 threads per SM), 2 x 256 = 512: none
    text = set_line(BASE, 10, "shape = [4, 128, 64]")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_plan_file(text, "k.toml")


def test_bad_target_points_at_the_target_line():
    message = refused(set_line(BASE, 1, 'target = "sm_99"'), TargetError)
    assert message.startswith("k.toml:1: unknown target 'sm_99'")


# -- pool errors: class kept, the key they name ----------------------------------------------

POOL_ERRORS = [
    (LINE["A.dtype"], 'dtype = "bfloat17"', DTypeError, ["unknown dtype 'bfloat17'"]),
    (LINE["bar.dtype"], 'dtype = "uint65"', DTypeError, ["unknown dtype 'uint65'"]),
    (LINE["bar.align"], "align = 3", type(None), ["align must be a power of two", "got 3"]),
    (LINE["bar.shape"], "shape = []", AllocationError, ["shape must be a non-empty tuple"]),
    (LINE["bar.shape"], "shape = [0]", AllocationError, ["shape"]),
    (LINE["bar.shape"], 'shape = "2"', AllocationError, ["shape must be", "'2'"]),
    (LINE["A.live"], 'live = "drain"', AllocationError, ["unknown phases ['drain']"]),
    (LINE["A.name"], "name = 5", AllocationError, ["buffer name must be a string, got 5"]),
    (LINE["A.shape"], "shape = [2, 128, 32]", SwizzleError, ["64-byte rows"]),
    # keys the message spells in words, or whose value it refuses ("got uint64")
    (LINE["A.swizzle_mode"], 'swizzle_mode = "96B"', LayoutError, ["unknown swizzle mode '96B'"]),
    (LINE["acc.datapath"], 'datapath = "Z"', LayoutError, ["unknown TMEM data path 'Z'"]),
    (LINE["acc.dtype"], 'dtype = "uint64"', LayoutError, ["MMA accumulators", "got uint64"]),
]


def test_an_error_naming_no_key_points_at_its_table():
    # acc's 256 columns overflow total_cols = 64: no key of acc's table is at fault alone
    message = refused(set_line(BASE, LINE["t.total_cols"], "total_cols = 64"), TMEMOverflowError)
    assert message.startswith("k.toml:23: [[tmem.buffers]] #1 of 't' 'acc': TMEM overflow")
    assert "total_cols is 64" in message


def test_tmem_on_a_target_without_it_points_at_the_tmem_pool():
    message = refused(set_line(BASE, 1, 'target = "sm_90a"'), TargetError)
    assert message.startswith("k.toml:18: [[tmem]] #1: TMEM pool 't': sm_90a has no tensor memory")


@pytest.mark.parametrize("line,text,cls,words", POOL_ERRORS)
def test_pool_errors_keep_their_class_at_the_key_they_name(line, text, cls, words):
    if cls is type(None):
        from tilemem.errors import AlignmentError

        cls = AlignmentError
    message = refused(set_line(BASE, line, text), cls)
    assert message.startswith(f"k.toml:{line}: ")
    for word in words:
        assert word in message


# -- encodings and binary files --------------------------------------------------------------

ENCODINGS = [
    ("utf-16", "k.toml:1: the file is UTF-16 text; plan files are UTF-8: save it as UTF-8"),
    ("utf-16-be-bom", "k.toml:1: the file is UTF-16 text; plan files are UTF-8: save it as UTF-8"),
    ("utf-32", "k.toml:1: the file is UTF-32 text; plan files are UTF-8: save it as UTF-8"),
    ("utf-16-le", "k.toml:1: a NUL byte: a binary (or UTF-16) file, not a plan file in UTF-8"),
    ("latin-1", "k.toml:4: byte 0xe9 is not UTF-8; plan files are UTF-8 text"),
    ("binary", "k.toml:1: a NUL byte: a binary (or UTF-16) file, not a plan file in UTF-8"),
    ("png", "k.toml:3: a NUL byte: a binary (or UTF-16) file, not a plan file in UTF-8"),
    ("png-head", "k.toml:1: byte 0x89 is not UTF-8; plan files are UTF-8 text"),
    ("cp1252-line-2", "k.toml:2: byte 0x93 is not UTF-8; plan files are UTF-8 text"),
]


def _encoded(kind: str) -> bytes:
    text = BASE.replace('name = "smem"', 'name = "smem"  # café')  # line 4
    if kind == "utf-16-be-bom":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    if kind == "binary":
        return bytes(range(256))
    if kind == "png":  # NUL bytes after two line ends
        return b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
    if kind == "png-head":
        return b"\x89PNG\r\n"
    if kind == "cp1252-line-2":  # a curly quote from a word processor
        return 'target = "sm_100a"\nname = \u201cx\u201d\n'.encode("cp1252")
    return text.encode(kind)


@pytest.mark.parametrize("kind,expected", ENCODINGS, ids=[k for k, _ in ENCODINGS])
def test_text_that_is_not_utf8_is_refused(tmp_path, kind, expected):
    path = tmp_path / "k.toml"
    path.write_bytes(_encoded(kind))
    with pytest.raises(PlanFileError) as info:
        load_plan(path)
    assert str(info.value) == expected.replace("k.toml", str(path))


def test_utf8_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "k.toml"
    path.write_bytes(codecs.BOM_UTF8 + BASE.encode())
    assert load_plan(path).pools == base_python_plan().pools


def test_a_folder_is_not_a_plan_file(tmp_path):
    with pytest.raises(PlanFileError, match=r"cannot read plan file .*: Is a directory"):
        load_plan(tmp_path)


def test_deeply_nested_toml_is_a_plan_file_error():
    text = "shape = " + "[" * 5000 + "]" * 5000 + "\n"
    message = refused(text)
    assert message.startswith("k.toml:")


# -- legitimate spellings give the exact plan --------------------------------------------------

LEGIT = [
    (LINE["A.live"], 'live = ["mainloop"]'),
    (LINE["A.live"], "'live' = 'mainloop'"),
    (LINE["A.live"], '"live" = "mainloop"'),
    (LINE["bar.shape"], "shape = [ 2 ]  # two barriers"),
    (LINE["t.total_cols"], "total_cols = 0x100"),
    (LINE["t.total_cols"], "total_cols = 2_56"),
    (LINE["view.col_start"], "col_start = +0"),
]


@pytest.mark.parametrize("line,text", LEGIT)
def test_equivalent_spellings_give_the_same_plan(line, text):
    assert parse_plan_file(set_line(BASE, line, text), "k.toml").build().plan() == (
        base_python_plan()
    )


def test_every_error_is_a_tilemem_error_with_the_file():
    # one more of each family through load_plan: the file name leads the message
    for text in ("[smem\n", "tmem = [1]\n", "threads = 0\n", 'target = "x"\n'):
        with pytest.raises(TilememError, match=r"^k\.toml:\d+: "):
            parse_plan_file(text, "k.toml")


# -- the plan's name names the header's namespace; its summary is a one-line title ----------

NAMES = [
    ("my plan", "is not an identifier"),
    ("é", "is not an identifier"),
    ("a::b", "is not an identifier"),
    ("1st", "is not an identifier"),
    ("bitand", "is a C++ or Python keyword"),
    ("not_eq", "is a C++ or Python keyword"),
    ("NULL", "is a macro of the C, C++ or CUDA headers"),
    ("x__y", "is reserved"),
    ("", "is not an identifier"),
]


@pytest.mark.parametrize("name,words", NAMES)
def test_plan_name_that_cannot_name_the_header_namespace(name, words):
    message = refused(f'target = "sm_90a"\nname = {name!r}\n')
    assert message.startswith(f"k.toml:2: name {name!r} ") and words in message


@pytest.mark.parametrize("summary", ["", "two\nlines", "tab\there", "x" * 1001])
def test_summary_must_be_one_printable_line(summary):
    text = f'target = "sm_90a"\nsummary = {json_string(summary)}\n'
    message = refused(text)
    assert message.startswith("k.toml:2: summary must be one line of 1 to 1000 printable")


def json_string(s: str) -> str:
    import json

    return json.dumps(s)  # a TOML basic string


def test_name_with_a_dash_and_the_file_stem(tmp_path):
    path = tmp_path / "my plan.toml"  # a stem that cannot name a namespace: the name is 'plan'
    path.write_text(
        'target = "sm_90a"\n[[smem.buffers]]\nname = "A"\nshape = [4]\ndtype = "uint64"\n'
    )
    assert load_plan(path).name == "plan"
    path = tmp_path / "tile-plan.toml"
    path.write_text('target = "sm_90a"\nname = "gemm-v2"\nsummary = "a GEMM"\n')
    plan = load_plan(path)
    assert (plan.name, plan.summary) == ("gemm-v2", "a GEMM")
    assert "namespace gemm_v2 {" in plan.to_cpp_header(namespace="gemm_v2")
