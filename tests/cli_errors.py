"""The CLIs' bad-input contract, shared by the CLI tests: exit code 2 and one `error: ...` line."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest


def one_line_exit_2(capsys, main: Callable[[Sequence[str]], object], argv: Sequence[str]) -> str:
    """Run `main(argv)`, assert it exits 2 with a single `error: ...` line on stderr; return that line."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    return err
