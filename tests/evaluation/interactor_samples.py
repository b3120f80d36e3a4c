"""Programs of an interactive task (guess a number in few questions), for the
interactor tests: the interactor in Python and in C, solutions right, wrong and hostile."""

GUESS_PYTHON = r"""
import sys

n, secret = map(int, open(sys.argv[1]).read().split())
print(n, flush=True)
asked = 0
for line in sys.stdin:
    kind, _, value = line.strip().partition(" ")
    if kind not in ("?", "!") or not value.isdigit():
        print(f"malformed line {line.strip()[:30]!r}", file=sys.stderr)
        sys.exit(2)
    if kind == "!":
        if int(value) == secret:
            sys.exit(0)
        print(f"answered {value}, the number was {secret}", file=sys.stderr)
        sys.exit(1)
    asked += 1
    if asked > 20:
        print("more than 20 questions", file=sys.stderr)
        sys.exit(1)
    print("<" if secret < int(value) else ">" if secret > int(value) else "=", flush=True)
print("no answer", file=sys.stderr)
sys.exit(1)
"""

# The same contract in C: a compiled interactor, built once like any program.
GUESS_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n, secret, value;
    char kind;
    FILE *in = fopen(argv[1], "r");
    if (!in || fscanf(in, "%ld %ld", &n, &secret) != 2) return 3;
    printf("%ld\n", n);
    fflush(stdout);
    for (int asked = 0;; asked++) {
        if (scanf(" %c %ld", &kind, &value) != 2) { fprintf(stderr, "no answer"); return 1; }
        if (kind == '!') { if (value == secret) return 0; fprintf(stderr, "wrong number"); return 1; }
        if (asked >= 20) { fprintf(stderr, "more than 20 questions"); return 1; }
        printf("%s\n", secret < value ? "<" : secret > value ? ">" : "=");
        fflush(stdout);
    }
}
"""

GUESS_CASES = [{"input": f"{n} {secret}\n", "output": f"{secret}\n"} for n, secret in
               ((10, 3), (1000000, 999999), (1000000, 1), (1, 1))]  # fmt: skip

BINARY_SEARCH_PYTHON = r"""
n = int(input())
lo, hi = 1, n
while lo < hi:
    mid = (lo + hi) // 2
    print("?", mid, flush=True)
    reply = input()
    if reply == "=":
        lo = hi = mid
    elif reply == "<":
        hi = mid - 1
    else:
        lo = mid + 1
print("!", lo, flush=True)
"""

BINARY_SEARCH_CPP = r"""
#include <iostream>
#include <string>
int main() {
    long n;
    std::cin >> n;
    long lo = 1, hi = n;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        std::cout << "? " << mid << std::endl;
        std::string reply;
        std::cin >> reply;
        if (reply == "=") lo = hi = mid;
        else if (reply == "<") hi = mid - 1;
        else lo = mid + 1;
    }
    std::cout << "! " << lo << std::endl;
}
"""

# Right only while the number is small: asks 1, 2, 3, ...
COUNT_UP_PYTHON = r"""
n = int(input())
for guess in range(1, n + 1):
    print("?", guess, flush=True)
    if input() == "=":
        print("!", guess, flush=True)
        break
"""

# Forgets to flush: the interactor never sees the question, and each waits for the other.
UNFLUSHED_PYTHON = r"""
import sys
n = int(sys.stdin.readline())
sys.stdout.write("? 1\n")  # input() would flush it; readline() does not
sys.stdin.readline()
"""

MALFORMED_PYTHON = r"""
input()
print("what is it?", flush=True)
"""

# Looks for the secret where a careless judge would leave it: the case's files, other
# processes' command lines, environments and open files.
SNOOPING_PYTHON = r"""
import os, re
found = None
for root in ("/scratch", "/tmp", "/proc"):
    for path, dirs, files in os.walk(root):
        if path.count("/") > 4:
            dirs[:] = []
            continue
        for name in files:
            if name.endswith((".input", ".answer")) or name in ("cmdline", "environ"):
                try:
                    text = open(os.path.join(path, name), "rb").read(4096).decode("latin-1")
                except OSError:
                    continue
                numbers = re.findall(r"\b(\d+) (\d+)\b", text)
                if numbers:
                    found = numbers[0][1]
n = input()
print("!", found or 0, flush=True)
"""
