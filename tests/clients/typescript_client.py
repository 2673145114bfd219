"""The TypeScript client's suite against its packed artifact: build the package with tsc
(`npm pack` runs its prepack), install the tarball into a fresh project in a temporary
directory, type-check a consumer against the installed types, and run the client's own
tests (clients/typescript/test, `node --test`) there against the real dshpty-repl. Reports
itself skipped (77) when node, npm or the TypeScript toolchain (tools/dev installs it into
the build tree from the npm registry) is missing; never reaches the network.

    typescript_client.py CLIENT_DIR TOOLCHAIN_DIR DSHPTY_REPL
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def run(argv, cwd, env):
    print("$ " + " ".join(argv), flush=True)
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: {argv[0]} exited {done.returncode}")
    return done.stdout


def main():
    client_dir, toolchain_dir, repl = (os.path.abspath(arg) for arg in sys.argv[1:4])
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (tools/dev test installs it)")
    modules = os.path.join(toolchain_dir, "node_modules")
    tsc = os.path.join(modules, "typescript", "bin", "tsc")
    if not os.path.exists(tsc) or not os.path.isdir(os.path.join(modules, "@types", "node")):
        skip(f"typescript and @types/node are not installed in {toolchain_dir} (tools/dev test installs them "
             "from the npm registry; it could not then)")

    env = dict(os.environ, npm_config_offline="true", npm_config_audit="false", npm_config_fund="false",
               npm_config_update_notifier="false", DSHPTY_REPL=os.path.abspath(repl),
               DSHPTY_FAKE_REPL=os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_repl.py"))
    with tempfile.TemporaryDirectory(prefix="dshpty-ts-client-") as tmp:
        package = os.path.join(tmp, "package")
        shutil.copytree(client_dir, package, ignore=shutil.ignore_patterns("node_modules", "dist"))
        os.symlink(os.path.abspath(modules), os.path.join(package, "node_modules"))
        env["npm_config_cache"] = os.path.join(tmp, "npm-cache")
        out = run(["npm", "pack", "--pack-destination", tmp, "--loglevel=error"], package, env)
        tarball = os.path.join(tmp, out.strip().splitlines()[-1])

        project = os.path.join(tmp, "project")
        os.mkdir(project)
        with open(os.path.join(project, "package.json"), "w") as f:
            json.dump({"name": "dshpty-consumer", "private": True, "type": "module"}, f)
        run(["npm", "install", "--loglevel=error", tarball], project, env)
        shutil.copytree(os.path.join(client_dir, "test"), os.path.join(project, "test"))

        # The installed types, as a TypeScript consumer sees them; strict_types.ts's
        # @ts-expect-error lines must each be an error (typos in fields, codes, closed sets).
        types = ["--types", "node", "--typeRoots", os.path.join(modules, "@types")]
        run(["node", tsc, "--noEmit", "--strict", "--exactOptionalPropertyTypes", "--module", "nodenext",
             "--moduleResolution", "nodenext", "--target", "es2022", *types,
             os.path.join("test", "consumer.ts"), os.path.join("test", "strict_types.ts")], project, env)
        # TypeScript 4.9 reads them too (no `export type *`), through `exports` and through `types`.
        tsc49 = os.path.join(modules, "typescript-4.9", "bin", "tsc")
        if os.path.exists(tsc49):
            for resolution in (["--module", "node16", "--moduleResolution", "node16"],
                               ["--module", "commonjs", "--moduleResolution", "node"]):
                run(["node", tsc49, "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", *resolution,
                     *types, os.path.join("test", "consumer.ts")], project, env)
        else:
            print("note: typescript-4.9 is not in the toolchain; the TypeScript 4.9 check is left out")

        # CommonJS hosts: require() from a plain .cjs file, and a TypeScript project emitting CommonJS.
        cjs = os.path.join(tmp, "cjs-project")
        os.mkdir(cjs)
        with open(os.path.join(cjs, "package.json"), "w") as f:
            json.dump({"name": "dshpty-cjs-consumer", "private": True}, f)
        run(["npm", "install", "--loglevel=error", tarball], cjs, env)
        fixtures = os.path.join(client_dir, "test", "fixtures")
        shutil.copy(os.path.join(fixtures, "require.cjs"), cjs)
        shutil.copy(os.path.join(fixtures, "require_ts.ts"), cjs)
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        run_env = dict(env, HOME=home)
        if "cjs ok" not in run(["node", "require.cjs"], cjs, run_env):
            raise SystemExit("FAIL: require('dshpty') did not run a send")
        run(["node", tsc, "--strict", "--module", "commonjs", "--moduleResolution", "node10", "--target", "es2022",
             *types, "--outDir", "out", "require_ts.ts"], cjs, env)
        if "ts-cjs ok" not in run(["node", os.path.join("out", "require_ts.js")], cjs, run_env):
            raise SystemExit("FAIL: TypeScript emitting CommonJS did not run a send")
        tests = sorted(glob.glob(os.path.join("test", "*.test.mjs"), root_dir=project))
        run(["node", "--test", "--expose-gc", "--test-concurrency=1", *tests], project, env)
    print("ok")


if __name__ == "__main__":
    main()
