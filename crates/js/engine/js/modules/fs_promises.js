// Bosun JS engine: `node:fs/promises`, the promise forms of `node:fs` (read-only, the plugin's
// own directory only; see modules/fs.js and modules/plugin_dir.js).
import fs from "node:fs";

const p = fs.promises;
export const constants = p.constants;
export const readFile = p.readFile;
export const readdir = p.readdir;
export const stat = p.stat;
export const lstat = p.lstat;
export const access = p.access;
export const realpath = p.realpath;
export const open = p.open;
export const opendir = p.opendir;
export const watch = p.watch;
export const writeFile = p.writeFile;
export const appendFile = p.appendFile;
export const mkdir = p.mkdir;
export const mkdtemp = p.mkdtemp;
export const rm = p.rm;
export const rmdir = p.rmdir;
export const unlink = p.unlink;
export const rename = p.rename;
export const copyFile = p.copyFile;
export const cp = p.cp;
export const symlink = p.symlink;
export const link = p.link;
export const chmod = p.chmod;
export const chown = p.chown;
export const truncate = p.truncate;
export const utimes = p.utimes;

export default p;
