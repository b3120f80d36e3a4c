"""One program per language that sums the integers on its input, one answer a line:
the canonical sample each language must pass, in both backends."""

from __future__ import annotations

SUM_CASES = [
    {"input": "3 4\n", "output": "7\n"},
    {"input": "10 -20\n", "output": "-10\n"},
    {"input": "1000000000000 1\n", "output": "1000000000001\n"},
]

SUM = {
    "c": '#include <stdio.h>\nint main(void){long long a,b;if(scanf("%lld %lld",&a,&b)!=2)return 1;'
    'printf("%lld\\n",a+b);return 0;}\n',
    "cpp17": "#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n",
    "cpp20": "#include <iostream>\n#include <numbers>\nint main(){long long a,b;std::cin>>a>>b;"
    "static_assert(std::numbers::pi > 3);std::cout<<a+b<<'\\n';}\n",
    "java": "import java.util.*;\npublic class Main {\n  public static void main(String[] args) {\n"
    "    Scanner in = new Scanner(System.in);\n    System.out.println(in.nextLong() + in.nextLong());\n  }\n}\n",
    "javascript": 'const [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(BigInt);\n'
    "console.log(String(a + b));\n",
    "typescript": 'const parts: string[] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/);\n'
    "const total: bigint = BigInt(parts[0]) + BigInt(parts[1]);\nconsole.log(total.toString());\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int64\n'
    "\tfmt.Scan(&a, &b)\n\tfmt.Println(a + b)\n}\n",
    "rust": "use std::io::Read;\nfn main() {\n    let mut s = String::new();\n"
    "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
    "    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n"
    '    println!("{}", v[0] + v[1]);\n}\n',
    "ruby": "a, b = STDIN.read.split.map(&:to_i)\nputs a + b\n",
    "php": '<?php\n[$a, $b] = array_map("intval", preg_split("/\\s+/", trim(stream_get_contents(STDIN))));\n'
    'echo $a + $b, "\\n";\n',
    "lua": 'local a, b = io.read("n", "n")\nprint(math.tointeger(a + b))\n',
    "csharp": "using System;\nclass Program {\n  static void Main() {\n"
    "    var p = Console.In.ReadToEnd().Split((char[])null, StringSplitOptions.RemoveEmptyEntries);\n"
    "    Console.WriteLine(long.Parse(p[0]) + long.Parse(p[1]));\n  }\n}\n",
}

# A source each compiled language's compiler refuses.
BROKEN = {
    "c": "int main(void) { return undeclared; }\n",
    "cpp17": "int main() { std::vector<int> v; }\n",
    "cpp20": "int main() { return missing(); }\n",
    "java": 'public class Main { public static void main(String[] a) { int x = "text"; } }\n',
    "typescript": "const n: number = 'not a number';\nconsole.log(n);\n",
    "go": "package main\n\nfunc main() { undefined() }\n",
    "rust": 'fn main() { let x: i32 = "text"; }\n',
    "csharp": 'class P { static void Main() { int x = "text"; } }\n',
}
