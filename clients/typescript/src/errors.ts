// Every failure the client reports is a DshptyError carrying a stable code: the repl's own
// codes (docs/contract.md, "Errors") passed through unchanged, plus the few the client
// raises itself (listed in ClientErrorCode), so a caller branches on `code`, never on text.

/** Codes the client raises without asking the repl. */
export type ClientErrorCode =
  /** the dshpty-repl child could not be started (not found, not executable) */
  | 'REPL_NOT_FOUND'
  /** the dshpty-repl child ended before answering; `message` says how (exit code or signal) */
  | 'REPL_EXITED'
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

/** A code may also be one a newer repl added; compare against the names above. */
export type DshptyErrorCode = ReplErrorCode | ClientErrorCode | (string & {});

/** The error shape of the JSON face: `{code, message, errors?}`. */
export interface WireError {
  code: string;
  message: string;
  errors?: WireError[];
}

export class DshptyError extends Error {
  readonly code: DshptyErrorCode;
  /** the parts of an aggregate (CLEANUP_FAILED), else empty */
  readonly errors: DshptyError[];

  constructor(code: DshptyErrorCode, message: string, errors: DshptyError[] = []) {
    super(message);
    this.name = 'DshptyError';
    this.code = code;
    this.errors = errors;
  }

  static fromWire(wire: WireError): DshptyError {
    const children = Array.isArray(wire.errors) ? wire.errors.map((child) => DshptyError.fromWire(child)) : [];
    return new DshptyError(String(wire.code), String(wire.message), children);
  }
}
