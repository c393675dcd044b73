import json

from tilemem import SMEMPool, TMEMPool


def small_plan():
    smem = SMEMPool(target="sm_100a")
    smem.alloc((3,), "uint8", name="flags")
    smem.alloc_mma((2, 64, 64), "bfloat16", "128B", name="A")
    smem.alloc((2,), "uint64", name="bar")
    tmem = TMEMPool(smem, 256, name="tmem")
    tmem.alloc((128, 128), "float32", name="acc")
    tmem.move_base_to(64)
    tmem.alloc((128, 64), "bfloat16", name="P")
    smem.commit()
    tmem.commit()
    return smem.plan()


def test_entries_have_offset_size_alignment_padding_layout():
    plan = small_plan()
    a = plan.entry("A")
    assert (a.scope, a.offset, a.length, a.align, a.padding) == (
        "shared.dyn",
        1024,
        16384,
        1024,
        1021,
    )
    assert a.layout.startswith("mma 128B") and a.shape == (2, 64, 64)
    bar = plan.entry("bar")
    assert (bar.offset, bar.length, bar.align, bar.padding) == (17408, 16, 8, 0)


def test_totals_and_high_water():
    plan = small_plan()
    assert plan.smem.high_water == 17408 + 16 + 4 and plan.smem.committed == plan.smem.high_water
    assert plan.smem.padding == 1021
    tmem = plan.tmem[0]
    assert (tmem.high_water, tmem.committed) == (128, 256)
    assert tmem.overlaps == [("P", "acc")]


def test_plan_is_json_ready():
    data = json.loads(json.dumps(small_plan().to_dict()))
    assert data["target"] == "sm_100a"
    smem, tmem = data["pools"]
    assert [e["name"] for e in smem["entries"]] == ["flags", "A", "bar", "tmem_addr"]
    assert smem["padding"] == 1021 and smem["entries"][1]["shape"] == [2, 64, 64]
    assert tmem["unit"] == "cols" and tmem["moves"] == [[128, 64]]
    assert tmem["entries"][1]["overlaps"] == ["acc"]


def test_text_form_has_table_totals_and_column_map():
    text = small_plan().format()
    for fact in (
        "name",
        "padding",
        "A",
        "1024",
        "16384",
        "high-water 17428 bytes",
        "TMEM columns 0..256",
        "A=acc[0:128)",
        "B=P[64:96)",
    ):
        assert fact in text, fact
    # aliased columns are marked
    assert "*" in text.split("TMEM columns")[1]
