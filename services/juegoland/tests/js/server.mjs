// `juegoland dev` for the JavaScript tests (web_client.mjs, client_library.mjs): started as a
// child process, tracked so that the test kills it when it ends, and known by the base URL
// it announces ("listening on http://ADDR/").
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * Starts `bin dev …args`, adding the process to `children` (and removing it when it exits);
 * resolves with `{ base, child }` once it listens (`base` without a trailing slash), rejects
 * with its last stderr lines if it exits first or does not listen within 30 s.
 */
export function startServer(bin, args, children) {
  const child = spawn(bin, ["dev", ...args], { env: { ...process.env, RUST_LOG: "warn" }, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  child.on("exit", () => children.delete(child));
  const tail = [];
  createInterface({ input: child.stderr }).on("line", (l) => (tail.push(l), tail.length > 40 && tail.shift()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not listen within 30 s:\n${tail.join("\n")}`)), 30_000);
    child.on("exit", (code, signal) => reject(new Error(`the server exited (${code ?? signal}):\n${tail.join("\n")}`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      const m = /^listening on (http:\/\/\S+?)\/(?:\s|$)/.exec(line.trim());
      if (m) {
        clearTimeout(timer);
        resolve({ base: m[1], child });
      }
    });
  });
}
