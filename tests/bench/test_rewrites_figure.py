"""Figure 15's counts (bench/rewrites_figure.py) from rows of both corpora's shapes."""

from __future__ import annotations

from typing import Any

from bench.rewrites_figure import summary


def _proof(offered: list[str], lowers: bool, verified: bool, rejected: list[str],
           kind: str = "", ran_on: str = "tosa") -> dict[str, Any]:
    return {"culprits": [{"ops": ["aten.erfinv"], "offered": bool(offered), "rewrites": offered,
                          "why": "", "max_abs": 0.0}],
            "checks": [{"rewrite": "refs.erfinv", "op": "aten.erfinv", "ok": False, "why": w}
                       for w in rejected],
            "offered": offered, "lowers": lowers, "verified": verified, "verify": "",
            "verify_kind": kind, "ran_on": ran_on}


def test_counts_pairs_fixed_ops_and_refusals_of_both_corpora() -> None:
    rows = [
        {"test": "A", "linalg": {"ok": True}, "tosa": {
            "ok": False, "rewrites": _proof(["erfinv"], True, True, [
                "the rewritten op does not lower alone on TOSA (`torch.prims.erf_inv`)"])}},
        {"test": "B", "tosa": {"ok": False, "rewrites": _proof([], False, False, [])}},
        {"test": "C", "tosa": {"ok": False, "rewrites": _proof(["sort"], True, True, [],
                                                               ran_on="linalg")}},
        {"test": "D", "tosa": {"ok": False, "rewrites": _proof(["sort"], True, False, [],
                                                               kind="verify-error")}},
        {"type": "phimoe", "product": {"tosa": {"ok": False}, "stablehlo": {"ok": False}},
         "rewrites": {"tosa": _proof(["histc"], True, False, [], kind="verify-mismatch"),
                      "stablehlo": {"error": "timeout: took too long"}}},
    ]
    counts = summary(rows)
    assert counts["tosa"]["failing"] == 5 and counts["tosa"]["tried"] == 5
    assert counts["tosa"]["lower_and_verify"] == 2 and counts["tosa"]["verified_on_own_ir"] == 1
    assert counts["tosa"]["culprit_ops_with_rewrite"] == ["aten.erfinv"]
    assert counts["tosa"]["offered_failing_verify"] == ["phimoe"]  # never acceptable
    assert counts["tosa"]["offered_not_run"] == ["D"]
    assert counts["tosa"]["rejected_by_proof"] == {"does not lower alone": 1}
    assert counts["stablehlo"]["failing"] == 1 and counts["stablehlo"]["tried"] == 0
