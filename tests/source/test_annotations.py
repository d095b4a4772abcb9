"""The `# torch-mlir-lens:` comment parser (pure text)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from torch_mlir_lens.source.annotations import (
    format_annotation,
    parse_annotation_block,
    split_top_level,
)


def _parse(src: str, def_line: int | None = None):
    lines = src.splitlines()
    if def_line is None:
        starts = ("class", "def")
        def_line = next(i + 1 for i, ln in enumerate(lines) if ln.lstrip().startswith(starts))
    return parse_annotation_block(lines, def_line)


def test_single_inputs_line():
    ann = _parse(
        "import torch\n# torch-mlir-lens: inputs=(torch.randn(2, 16),)\nclass M:\n    pass\n"
    )
    assert ann is not None
    assert ann.inputs == "(torch.randn(2, 16),)"
    assert ann.init is None and ann.dynamic is None
    assert ann.line == 2
    assert ann.errors == []


def test_three_lines_with_decorator_and_plain_comment_between():
    src = (
        "# A model.\n"
        "# torch-mlir-lens: inputs=(torch.randn(2, 16),)\n"
        "# it is small\n"
        "# torch-mlir-lens: init=(16, 4)\n"
        '# torch-mlir-lens: dynamic={"x": {0: "batch"}}\n'
        "@dataclass_like\n"
        "@other(1,\n"
        ")\n"
        "class M:\n"
        "    pass\n"
    )
    # def_line = first decorator (what discovery passes)
    ann = _parse(src, def_line=6)
    assert ann is not None
    assert (ann.inputs, ann.init, ann.dynamic) == (
        "(torch.randn(2, 16),)", "(16, 4)", '{"x": {0: "batch"}}'
    )
    assert ann.line == 2
    assert ann.key_lines == {"inputs": 2, "init": 4, "dynamic": 5}


def test_keys_share_a_line_with_semicolons_and_strings():
    ann = _parse('# torch-mlir-lens: inputs=(f("a;b"),); init={"k": 1}\ndef f(x):\n    pass\n')
    assert ann is not None
    assert ann.inputs == '(f("a;b"),)'
    assert ann.init == '{"k": 1}'


def test_multiline_value_continues_on_next_comment_lines():
    src = (
        "# torch-mlir-lens: inputs=(torch.randn(2, 4),\n"
        "#     torch.randn(3, 4))\n"
        "def f(a, b):\n"
        "    return a\n"
    )
    ann = _parse(src)
    assert ann is not None
    assert ann.inputs == "(torch.randn(2, 4), torch.randn(3, 4))"
    assert ann.errors == []


def test_blank_line_separates_comment_from_definition():
    assert _parse("# torch-mlir-lens: inputs=(1,)\n\nclass M:\n    pass\n") is None


def test_no_comment_gives_none():
    assert _parse("import torch\nclass M:\n    pass\n") is None
    assert _parse("class M:\n    pass\n") is None


def test_bad_expression_and_unknown_key_are_reported_not_raised():
    ann = _parse("# torch-mlir-lens: inputs=(torch.randn(2,; bogus=3\nclass M:\n    pass\n")
    assert ann is not None
    assert ann.inputs is None
    assert [e.line for e in ann.errors if "unclosed" in e.message] == [1]

    ann = _parse("# torch-mlir-lens: inputs=(1 +,) ; colour=3 ; init=(2,)\nclass M:\n    pass\n")
    assert ann is not None
    assert ann.inputs is None and ann.init == "(2,)"
    assert any("`inputs=`" in e.message for e in ann.errors)
    assert any("unknown key 'colour'" in e.message for e in ann.errors)


def test_keys_written_without_a_semicolon_are_an_error_at_their_line_with_the_fix():
    text = ("import torch\n# an ordinary comment\n"
            "# torch-mlir-lens: inputs=(torch.randn(2, 16),) dynamic={\"x\": {0: \"batch\"}}\n"
            "class M:\n    pass\n")
    ann = _parse(text)
    assert ann is not None and ann.inputs is None and ann.dynamic is None
    (error,) = ann.errors
    assert error.line == 3
    assert "separate `inputs=` and `dynamic=` with `;`" in error.message


def test_prefix_is_flexible_about_spaces_and_case():
    ann = _parse("#Torch-MLIR-Lens:inputs=(x,)\nclass M:\n    pass\n")
    assert ann is not None and ann.inputs == "(x,)"


def test_later_key_overrides_earlier():
    ann = _parse(
        "# torch-mlir-lens: inputs=(1,)\n# torch-mlir-lens: inputs=(2,)\nclass M:\n    pass\n"
    )
    assert ann is not None and ann.inputs == "(2,)" and ann.key_lines["inputs"] == 2


def test_split_top_level_and_format():
    assert split_top_level("a=(1; 2); b='x;y' ; c=[;]") == ["a=(1; 2)", "b='x;y'", "c=[;]"]
    assert format_annotation(inputs="(x,)", init="(1,)", indent="    ") == (
        "    # torch-mlir-lens: inputs=(x,)\n    # torch-mlir-lens: init=(1,)"
    )


_EXPRS = st.sampled_from([
    "(torch.randn(2, 16),)", "(16, 4)", '{"x": {0: "batch"}}', "dict(n_layers=2)",
    "(f('a;b'), [1, 2])", '{"k": "#not a comment"}', "torch.randn(3)",
])


@settings(deadline=None)  # the machine is shared: timing is not what is tested
@given(inputs=_EXPRS, init=st.none() | _EXPRS, dynamic=st.none() | _EXPRS,
       indent=st.sampled_from(["", "    "]), decorators=st.integers(0, 2))
def test_format_then_parse_round_trips(inputs, init, dynamic, indent, decorators):
    comment = format_annotation(inputs=inputs, init=init, dynamic=dynamic, indent=indent)
    lines = ["import torch", *comment.split("\n")]
    def_line = len(lines) + 1
    lines += [f"{indent}@deco{i}" for i in range(decorators)] + [f"{indent}class M:", "    pass"]
    ann = parse_annotation_block(lines, def_line)
    assert ann is not None and ann.errors == []
    assert (ann.inputs, ann.init, ann.dynamic) == (inputs, init, dynamic)
    assert ann.line == 2


def test_rewrites_key_lists_names_and_backends():
    ann = _parse("# torch-mlir-lens: inputs=(x,); rewrites=erfinv@tosa, histc\nclass M:\n  pass\n")
    assert ann is not None and ann.errors == []
    assert ann.rewrites == "erfinv@tosa, histc" and ann.key_lines["rewrites"] == 1
    bad = _parse("# torch-mlir-lens: rewrites=erfinv@tosa histc\nclass M:\n  pass\n")
    assert bad is not None and bad.rewrites is None
    assert "NAME@BACKEND" in bad.errors[0].message
    assert format_annotation(inputs="(x,)", rewrites="erfinv@tosa") == (
        "# torch-mlir-lens: inputs=(x,)\n# torch-mlir-lens: rewrites=erfinv@tosa")
