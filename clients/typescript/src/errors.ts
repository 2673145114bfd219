// Every failure the client reports is a DshptyError carrying a stable code: the repl's own
// codes (docs/contract.md, "Errors") passed through unchanged, plus the few the client
// raises itself (listed in ClientErrorCode), so a caller branches on `code`, never on text.
import type { SendResult } from './types.js';

/** Codes the client raises without asking the repl. */
export type ClientErrorCode =
  /** the dshpty-repl child could not be started (not found, not executable, not answering `hello`) */
  | 'REPL_NOT_FOUND'
  /** the dshpty-repl child ended before answering; `message` says how (exit code or signal) */
  | 'REPL_EXITED'
  /** the child did not answer within the request deadline (`requestTimeoutMs`): stopped or wedged */
  | 'REPL_TIMEOUT'
  /** the service was disposed, or is being disposed */
  | 'SERVICE_DISPOSING'
  /** an owner that was disposed, or minted by another service */
  | 'OWNER_NOT_LIVE'
  /** a bad argument caught before it reached the repl (a second live owner of one name) */
  | 'INVALID_ARGUMENT';

/** The repl's codes, as its JSON face names them. */
export type ReplErrorCode =
  | 'DUPLICATE_BACKEND'
  | 'DUPLICATE_NAME'
  | 'FOREIGN_SESSION'
  | 'NO_BACKEND'
  | 'NO_SESSION'
  | 'OWNER_NOT_LIVE'
  | 'SEND_ACTIVE'
  | 'SERVICE_DISPOSING'
  | 'SESSION_CLOSING'
  | 'SESSION_EXITED'
  | 'INVALID_ARGUMENT'
  | 'BACKEND_FAILED'
  | 'BACKEND_CLEANUP_FAILED'
  | 'CLEANUP_FAILED'
  | 'ABORTED';

/** A closed set, so a misspelt code is a type error. A code a newer repl adds arrives as
 *  it is sent; compare against these names. */
export type DshptyErrorCode = ReplErrorCode | ClientErrorCode;

/** The error shape of the JSON face: `{code, message, errors?}`. */
export interface WireError {
  code: string;
  message: string;
  errors?: WireError[] | undefined;
}

export class DshptyError extends Error {
  readonly code: DshptyErrorCode;
  /** the parts of an aggregate (CLEANUP_FAILED), else empty */
  readonly errors: DshptyError[];
  /** for ABORTED: what the send had shown when the cancel settled it (its exit code, output) */
  readonly result: SendResult | undefined;

  constructor(code: DshptyErrorCode, message: string, errors: DshptyError[] = [], result?: SendResult, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'DshptyError';
    this.code = code;
    this.errors = errors;
    this.result = result;
  }

  /** `DshptyError SEND_ACTIVE: message`: the code shows in logs and `String(error)`. */
  override toString(): string {
    return `${this.name} ${this.code}: ${this.message}`;
  }

  static fromWire(wire: WireError): DshptyError {
    const children = Array.isArray(wire.errors) ? wire.errors.map((child) => DshptyError.fromWire(child)) : [];
    return new DshptyError(String(wire.code) as DshptyErrorCode, String(wire.message), children);
  }
}
