export { DshptyService, type StartOptions } from './service.js';
export { DshptyOwner } from './owners.js';
export { DshptyError, type DshptyErrorCode, type ClientErrorCode, type ReplErrorCode } from './errors.js';
export type * from './types.js';
