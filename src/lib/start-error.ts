/** A start (or a command) that cannot go on, said in one line: main prints it without a stack and exits 1. */
export class StartError extends Error {}
