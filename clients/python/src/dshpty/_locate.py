"""Which dshpty-repl to run: the caller's choice, then $DSHPTY_REPL, then the PATH."""

import os
import shutil
from typing import Mapping, Optional

from ._errors import DshptyError


def locate_repl(repl: Optional[str], env: Mapping[str, str]) -> str:
    chosen = repl or env.get("DSHPTY_REPL") or None
    if chosen is not None:
        if os.sep in chosen:
            path = os.path.abspath(chosen)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise DshptyError("REPL_NOT_FOUND", f"{path} is not an executable file")
            return path
        found = shutil.which(chosen, path=env.get("PATH", ""))
    else:
        found = shutil.which("dshpty-repl", path=env.get("PATH", ""))
    if not found:
        raise DshptyError("REPL_NOT_FOUND",
                          f"{chosen or 'dshpty-repl'} is not on the PATH (pass repl= or set DSHPTY_REPL)")
    return found
