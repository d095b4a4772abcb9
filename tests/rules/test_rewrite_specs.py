"""`rewrites=` items as users write them (rules/rewrite_specs.py)."""

from __future__ import annotations

import pytest

from torch_mlir_lens.rules.rewrite_specs import (
    AUTO,
    RewriteSpec,
    names_for,
    parse_specs,
    with_spec,
)


def test_items_name_a_rewrite_and_maybe_a_backend() -> None:
    specs = parse_specs("erfinv@tosa, histc, decomp.slice.Tensor@stablehlo, auto")
    assert specs == [RewriteSpec("erfinv", "tosa"), RewriteSpec("histc"),
                     RewriteSpec("decomp.slice.Tensor", "stablehlo"), RewriteSpec(AUTO)]
    assert names_for(specs, "tosa") == ["erfinv", "histc", AUTO]
    assert names_for(specs, "linalg") == ["histc", AUTO]
    assert parse_specs(["erfinv@tosa", "erfinv@tosa"]) == [RewriteSpec("erfinv", "tosa")]


@pytest.mark.parametrize(("text", "words"), [
    ("erfinv@tpu", "unknown backend `tpu`"),
    ("erf inv", "`erf inv` is not a rewrite"),
])
def test_bad_items_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_specs(text)


def test_adding_an_item_keeps_the_others() -> None:
    assert with_spec(None, "erfinv", "tosa") == "erfinv@tosa"
    assert with_spec("erfinv@tosa", "histc", None) == "erfinv@tosa, histc"
    assert with_spec("erfinv@tosa", "erfinv", "tosa") == "erfinv@tosa"
    assert with_spec("erfinv@tosa, histc", "erfinv", None) == "histc, erfinv"
    assert with_spec("histc", "histc", "tosa") == "histc"  # every backend stands for it


def test_the_rewrites_that_act_at_export_and_their_titles() -> None:
    from torch_mlir_lens.rules.rewrite_specs import at_export, pin_title

    assert at_export("pin.vq.initted") and at_export("export.specialize")
    assert not any(at_export(n) for n in ("pin.", "erfinv", "export.other", "decomp.x"))
    assert pin_title(["export.specialize"], 0.0) == (
        "Export past the refusal: specialise it to the example's decisions (max error 0 on "
        "the example inputs)")
    assert pin_title(["pin.vq.initted"], None) == (
        "Export past the refusal: pin `vq.initted` to its value")
