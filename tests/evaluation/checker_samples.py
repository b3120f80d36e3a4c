"""Checkers written here for the tests and the sample catalogue, under testlib's
contract: `checker INPUT OUTPUT ANSWER`, exit 0 accepted, 1 wrong answer,
2 presentation error, 3 the checker failed; the message on stderr."""

from __future__ import annotations

# Any pair of numbers from the input whose sum is the target: many right answers,
# so no fixed expected output could judge it.
PAIR_STATEMENT = "Print two distinct indices (1-based) of numbers in the list that sum to the target."
PAIR_CASES = [
    {"input": "4 9\n2 7 11 15\n", "output": "1 2\n"},
    {"input": "5 10\n1 9 3 7 5\n", "output": "3 4\n"},
    {"input": "6 0\n-3 1 3 -1 4 5\n", "output": "2 4\n"},
]
PAIR_PYTHON = r"""
import sys

def read(path):
    with open(path) as handle:
        return handle.read()

numbers_in = read(sys.argv[1]).split()
count, target = int(numbers_in[0]), int(numbers_in[1])
values = [int(v) for v in numbers_in[2:2 + count]]
said = read(sys.argv[2]).split()
if len(said) != 2:
    print(f"expected two indices, got {len(said)} tokens", file=sys.stderr)
    sys.exit(2)
try:
    i, j = int(said[0]), int(said[1])
except ValueError:
    print(f"indices must be integers, got {said!r}", file=sys.stderr)
    sys.exit(2)
if not (1 <= i <= count and 1 <= j <= count) or i == j:
    print(f"indices {i} {j} out of range or equal", file=sys.stderr)
    sys.exit(1)
if values[i - 1] + values[j - 1] != target:
    print(f"{values[i - 1]} + {values[j - 1]} != {target}", file=sys.stderr)
    sys.exit(1)
sys.exit(0)
"""
PAIR_CPP = r"""
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: checker input output answer"); return 3; }
  std::ifstream in(argv[1]), out(argv[2]);
  long n, target; in >> n >> target;
  std::vector<long> v(n);
  for (auto& x : v) in >> x;
  std::string a, b, extra;
  if (!(out >> a >> b)) { std::fprintf(stderr, "expected two indices"); return 2; }
  if (out >> extra) { std::fprintf(stderr, "extra output after the indices"); return 2; }
  long i, j;
  try { i = std::stol(a); j = std::stol(b); } catch (...) { std::fprintf(stderr, "not integers"); return 2; }
  if (i < 1 || j < 1 || i > n || j > n || i == j) { std::fprintf(stderr, "bad indices %ld %ld", i, j); return 1; }
  if (v[i - 1] + v[j - 1] != target) { std::fprintf(stderr, "%ld + %ld != %ld", v[i - 1], v[j - 1], target); return 1; }
  return 0;
}
"""
# Right, but not the jury's answer on the hidden cases (1 2 and 1 3).
PAIR_SOLUTION_OTHER = """
count, target = map(int, input().split())
values = list(map(int, input().split()))
seen = {}
for index, value in enumerate(values, 1):
    if target - value in seen:
        print(seen[target - value], index)
        break
    seen[value] = index
"""
PAIR_SOLUTION_WRONG = """
count, target = map(int, input().split())
print(1, 2)
"""
PAIR_SOLUTION_MALFORMED = """
input(); input()
print("the answer is 1 and 2")
"""
PAIR_C = r"""
#include <stdio.h>
int main(void) {
  long n, t, v[1000];
  if (scanf("%ld %ld", &n, &t) != 2) return 1;
  for (long i = 0; i < n; i++) scanf("%ld", &v[i]);
  for (long i = 0; i < n; i++)
    for (long j = i + 1; j < n; j++)
      if (v[i] + v[j] == t) { printf("%ld %ld\n", i + 1, j + 1); return 0; }
  return 0;
}
"""

# Generic token checkers (testlib's wcmp, written here): the output's whitespace-separated
# tokens equal the answer's. What a task with a checker costs over plain token comparison.
TOKENS_CPP = r"""
#include <cstdio>
#include <fstream>
#include <string>
int main(int argc, char** argv) {
  if (argc < 4) return 3;
  std::ifstream out(argv[2]), ans(argv[3]);
  std::string got, want;
  for (long n = 1;; n++) {
    bool more_got = static_cast<bool>(out >> got), more_want = static_cast<bool>(ans >> want);
    if (!more_got && !more_want) return 0;
    if (!more_want) { std::fprintf(stderr, "extra token %ld", n); return 1; }
    if (!more_got) { std::fprintf(stderr, "token %ld missing", n); return 1; }
    if (got != want) { std::fprintf(stderr, "token %ld differs", n); return 1; }
  }
}
"""
TOKENS_PYTHON = r"""
import sys
got = open(sys.argv[2]).read().split()
want = open(sys.argv[3]).read().split()
if got != want:
    print(f"{len(got)} tokens, expected {len(want)}" if len(got) != len(want) else "a token differs", file=sys.stderr)
    sys.exit(1)
"""
