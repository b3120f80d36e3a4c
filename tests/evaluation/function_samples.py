"""One function task in every language, for the function_calls tests: `top_k(xs, k)`,
the k largest values of xs, largest first, written here for this project. Each
language has a right solution and a wrong one (it keeps the first k values it sees,
sorted), which passes the visible case and fails a hidden one."""

from __future__ import annotations

SIGNATURE = {"params": [{"name": "xs", "type": "list[int]"}, {"name": "k", "type": "int"}], "returns": "list[int]"}
VISIBLE = [{"args": [[5, 4, 1], 2], "expected": [5, 4]}]
HIDDEN = [
    {"args": [[1, 9, 3, 7], 2], "expected": [9, 7]},
    {"args": [[-2, -8, 2**40], 1], "expected": [2**40]},
    {"args": [[], 0], "expected": []},
]

RIGHT = {
    "python": "def top_k(xs, k):\n    return sorted(xs, reverse=True)[:k]\n",
    "c": (
        "#include <stdlib.h>\n\n"
        "static int desc(const void *a, const void *b) {\n"
        "    long long x = *(const long long *)a, y = *(const long long *)b;\n"
        "    return (x < y) - (x > y);\n}\n\n"
        "long long *top_k(long long *xs, size_t xs_len, long long k, size_t *out_len) {\n"
        "    qsort(xs, xs_len, sizeof *xs, desc);\n"
        "    *out_len = (size_t)k < xs_len ? (size_t)k : xs_len;\n"
        "    return xs;\n}\n"
    ),
    "cpp17": (
        "#include <bits/stdc++.h>\nusing namespace std;\n\n"
        "vector<long long> top_k(vector<long long> xs, long long k) {\n"
        "    sort(xs.begin(), xs.end());\n    vector<long long> out;\n"
        "    for (long long i = (long long)xs.size() - 1; i >= 0 && (long long)out.size() < k; i--)\n"
        "        out.push_back(xs[i]);\n    return out;\n}\n"
    ),
    "cpp20": (
        "#include <algorithm>\n#include <vector>\n\n"
        "std::vector<long long> top_k(std::vector<long long> xs, long long k) {\n"
        "    std::ranges::sort(xs, std::greater<>());\n"
        "    xs.resize(std::min<size_t>(k, xs.size()));\n    return xs;\n}\n"
    ),
    "java": (
        "import java.util.*;\n\nclass Solution {\n"
        "    public static List<Long> top_k(List<Long> xs, long k) {\n"
        "        List<Long> sorted = new ArrayList<>(xs);\n"
        "        sorted.sort(Collections.reverseOrder());\n"
        "        return new ArrayList<>(sorted.subList(0, (int) Math.min(k, sorted.size())));\n    }\n}\n"
    ),
    "javascript": "function top_k(xs, k) {\n  return [...xs].sort((a, b) => b - a).slice(0, k);\n}\n",
    "typescript": (
        "function top_k(xs: number[], k: number): number[] {\n  return [...xs].sort((a, b) => b - a).slice(0, k);\n}\n"
    ),
    "go": (
        'package main\n\nimport "sort"\n\n'
        "func top_k(xs []int, k int) []int {\n"
        "\tsort.Sort(sort.Reverse(sort.IntSlice(xs)))\n"
        "\tif k > len(xs) {\n\t\tk = len(xs)\n\t}\n\treturn xs[:k]\n}\n"
    ),
    "rust": (
        "fn top_k(mut xs: Vec<i64>, k: i64) -> Vec<i64> {\n"
        "    xs.sort_by(|a, b| b.cmp(a));\n    xs.truncate(k as usize);\n    xs\n}\n"
    ),
    "ruby": "def top_k(xs, k)\n  xs.sort.reverse.first(k)\nend\n",
    "php": "<?php\nfunction top_k($xs, $k) {\n    rsort($xs);\n    return array_slice($xs, 0, $k);\n}\n",
    "lua": (
        "function top_k(xs, k)\n  table.sort(xs, function(a, b) return a > b end)\n"
        "  local out = {}\n  for i = 1, math.min(k, #xs) do out[i] = xs[i] end\n  return out\nend\n"
    ),
    "csharp": (
        "using System.Collections.Generic;\nusing System.Linq;\n\nclass Solution {\n"
        "    public static List<long> top_k(List<long> xs, long k) {\n"
        "        return xs.OrderByDescending(x => x).Take((int) k).ToList();\n    }\n}\n"
    ),
}

# The first k values seen, sorted: right on the visible case only.
WRONG = {
    "python": "def top_k(xs, k):\n    return sorted(xs[:k], reverse=True)\n",
    "c": (
        "#include <stdlib.h>\n\n"
        "long long *top_k(long long *xs, size_t xs_len, long long k, size_t *out_len) {\n"
        "    *out_len = (size_t)k < xs_len ? (size_t)k : xs_len;\n"
        "    if (*out_len == 2 && xs[0] < xs[1]) { long long t = xs[0]; xs[0] = xs[1]; xs[1] = t; }\n"
        "    return xs;\n}\n"
    ),
    "cpp17": (
        "#include <bits/stdc++.h>\nusing namespace std;\n\n"
        "vector<long long> top_k(vector<long long> xs, long long k) {\n"
        "    xs.resize(min<size_t>(k, xs.size()));\n    sort(xs.rbegin(), xs.rend());\n    return xs;\n}\n"
    ),
    "cpp20": (
        "#include <algorithm>\n#include <vector>\n\n"
        "std::vector<long long> top_k(std::vector<long long> xs, long long k) {\n"
        "    xs.resize(std::min<size_t>(k, xs.size()));\n"
        "    std::ranges::sort(xs, std::greater<>());\n    return xs;\n}\n"
    ),
    "java": (
        "import java.util.*;\n\nclass Solution {\n"
        "    public static List<Long> top_k(List<Long> xs, long k) {\n"
        "        List<Long> first = new ArrayList<>(xs.subList(0, (int) Math.min(k, xs.size())));\n"
        "        first.sort(Collections.reverseOrder());\n        return first;\n    }\n}\n"
    ),
    "javascript": "function top_k(xs, k) {\n  return xs.slice(0, k).sort((a, b) => b - a);\n}\n",
    "typescript": (
        "function top_k(xs: number[], k: number): number[] {\n  return xs.slice(0, k).sort((a, b) => b - a);\n}\n"
    ),
    "go": (
        'package main\n\nimport "sort"\n\n'
        "func top_k(xs []int, k int) []int {\n"
        "\tif k > len(xs) {\n\t\tk = len(xs)\n\t}\n"
        "\tfirst := xs[:k]\n\tsort.Sort(sort.Reverse(sort.IntSlice(first)))\n\treturn first\n}\n"
    ),
    "rust": (
        "fn top_k(mut xs: Vec<i64>, k: i64) -> Vec<i64> {\n"
        "    xs.truncate(k as usize);\n    xs.sort_by(|a, b| b.cmp(a));\n    xs\n}\n"
    ),
    "ruby": "def top_k(xs, k)\n  xs.first(k).sort.reverse\nend\n",
    "php": (
        "<?php\nfunction top_k($xs, $k) {\n    $first = array_slice($xs, 0, $k);\n    rsort($first);\n"
        "    return $first;\n}\n"
    ),
    "lua": (
        "function top_k(xs, k)\n  local out = {}\n  for i = 1, math.min(k, #xs) do out[i] = xs[i] end\n"
        "  table.sort(out, function(a, b) return a > b end)\n  return out\nend\n"
    ),
    "csharp": (
        "using System.Collections.Generic;\nusing System.Linq;\n\nclass Solution {\n"
        "    public static List<long> top_k(List<long> xs, long k) {\n"
        "        return xs.Take((int) k).OrderByDescending(x => x).ToList();\n    }\n}\n"
    ),
}
LANGUAGES = tuple(RIGHT)
