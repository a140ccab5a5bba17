// Bosun JS engine: `node:child_process`, a clear refusal.
//
// Plugins in Bosun's sandbox cannot start processes. Importing the module works (so a plugin
// that only spawns inside one tool still activates); calling any of its functions throws an
// error that says so. A tool that needs a process belongs in Bosun's built-in `run_command`,
// which policy and approval govern.

function refuse(name) {
  return function refused() {
    const error = new Error(
      `child_process.${name} is not available in Bosun's sandbox: plugins cannot start processes`,
    );
    error.code = "ERR_ACCESS_DENIED";
    throw error;
  };
}

export const spawn = refuse("spawn");
export const spawnSync = refuse("spawnSync");
export const exec = refuse("exec");
export const execSync = refuse("execSync");
export const execFile = refuse("execFile");
export const execFileSync = refuse("execFileSync");
export const fork = refuse("fork");

export default { spawn, spawnSync, exec, execSync, execFile, execFileSync, fork };
