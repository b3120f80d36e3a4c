"""Mutation engine: AST mutants of Python references, token mutants of the other languages'.

A mutant is the reference with exactly one small change (a flipped comparison, a
dropped statement, ...). A test suite that still passes on a mutant cannot tell
that change from the reference, so mutants measure how much a task's tests pin
down. Mutants are spliced into the reference text where possible, so a curator's
diff shows the one changed line, not a reformatted file.

- `record`: the `Mutant` a caller gets back, and its diff;
- `sites`: the walk over the reference's tree and the places a change can go;
- `operators`: the families of changes (comparison, arithmetic, boolean, ...);
- `transforms`: what each change does to its copy of the target node;
- `builder`: one site applied to the reference, spliced into its text and checked;
- `generation`: `generate_mutants`, the entry point, which picks sites fairly;
- `tokens`: `generate_token_mutants`, one-token changes of programs in the other
  eleven languages (C, C++, Java, C#, JavaScript, TypeScript, Go, Rust, PHP, Ruby, Lua).

The verification configuration hashes every file of this package
(`config._source_version("mutants")`): a change here is a new configuration.
"""

from evaluation.verification.mutants.generation import generate_mutants
from evaluation.verification.mutants.operators import FAMILIES
from evaluation.verification.mutants.record import Mutant
from evaluation.verification.mutants.tokens import TOKEN_LANGUAGES, generate_token_mutants

__all__ = ["FAMILIES", "TOKEN_LANGUAGES", "Mutant", "generate_mutants", "generate_token_mutants"]
