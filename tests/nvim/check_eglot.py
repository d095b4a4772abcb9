"""Runs the Eglot snippet of docs/editors.md in a real Emacs against the real server.

Not part of `make test` (which installs no Emacs): run it where Emacs and Eglot are
installed (Debian 12: `apt-get install emacs-nox elpa-eglot`, Emacs 28 with Eglot 1.9):

    python tests/nvim/check_eglot.py

The snippet, with this interpreter in place of `python3`, is loaded into `emacs --batch` on
a copy of examples/mlp.py in a fresh git repository (Eglot needs a project) whose
.dir-locals.el tries to trust it. Checked: before trust `torch-mlir-lens-show-ir` is refused
with the server's message and serverInfo says untrusted, despite the .dir-locals.el; after
`torch-mlir-lens-trust` it shows the MLP's Linalg IR. Prints each check and exits 1 when one
fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.nvim.editor_snippets import ROOT, snippets

DRIVER = r"""
(require 'json)
(setq eglot-sync-connect t eglot-connect-timeout 120)
(defvar check-result nil)
(defun check-note (key value) (push (cons key value) check-result))
(defun check-finish (code)
  (with-temp-file (getenv "TML_CHECK_RESULT") (insert (json-encode check-result)))
  (kill-emacs code))
(condition-case err
    (progn
      (find-file (getenv "TML_CHECK_FILE"))  ; python-mode and the project's .dir-locals.el
      (apply #'eglot (eglot--guess-contact))
      (let ((server (eglot--current-server-or-lose)))
        (goto-char (point-min))
        (search-forward "return self.head(x)")
        (check-note 'refused
                    (condition-case e (progn (torch-mlir-lens-show-ir "linalg") nil)
                      (user-error (cadr e))))
        (check-note 'trusted-before
                    (plist-get (jsonrpc-request server :torchMlirLens/serverInfo
                                                '(:waitForWorker :json-false))
                               :trusted))
        (torch-mlir-lens-trust t)
        (torch-mlir-lens-show-ir "linalg")
        (check-note 'ir (with-current-buffer "*MLP linalg IR*" (buffer-string)))
        (eglot-shutdown server))
      (check-finish 0))
  (error (check-note 'error (error-message-string err)) (check-finish 1)))
"""


def main() -> int:
    emacs = shutil.which("emacs")
    if emacs is None:
        print("emacs not found: apt-get install emacs-nox elpa-eglot")
        return 1
    lisp = snippets("elisp")[0].replace('"python3" "-m"', f'"{sys.executable}" "-m"')
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        project = work / "project"
        project.mkdir()
        shutil.copy(ROOT / "examples" / "mlp.py", project / "mlp.py")
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        # A repository that tries to trust itself through eglot-workspace-configuration,
        # which Emacs applies without asking (Eglot declares it safe) and Eglot sends as
        # didChangeConfiguration: the server must ignore `trusted` there. (A risky variable
        # beside it would make Emacs skip the whole file in batch mode: not here.)
        (project / ".dir-locals.el").write_text(
            "((nil . ((eglot-workspace-configuration\n"
            "          . (:trusted t :torchMlirLens (:trusted t))))))\n")
        (work / "snippet.el").write_text(lisp)
        (work / "driver.el").write_text(DRIVER)
        result_path = work / "result.json"
        env = {"TML_CHECK_FILE": str(project / "mlp.py"), "TML_CHECK_RESULT": str(result_path),
               "HOME": str(work)}
        proc = subprocess.run(
            [emacs, "--batch", "-l", str(work / "snippet.el"), "-l", str(work / "driver.el")],
            env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        if not result_path.exists():
            print(f"emacs wrote no result (exit {proc.returncode})\n{proc.stderr[-4000:]}")
            return 1
        result = dict(json.loads(result_path.read_text()))
    checks = {
        "no error": result.get("error") is None,
        "refused before trust, saying how to trust":
            "not trusted" in str(result.get("refused"))
            and "torch-mlir-lens-trust" in str(result.get("refused")),
        "untrusted before trust, whatever .dir-locals.el says":
            result.get("trusted-before") in (False, "false"),
        "Linalg IR after trust": "linalg.matmul" in str(result.get("ir")),
    }
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if not all(checks.values()):
        print(json.dumps(result, indent=1)[:4000])
        print(proc.stderr[-4000:])
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
