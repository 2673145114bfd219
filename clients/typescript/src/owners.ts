// Owners in a client: an owner's label is its name, so the same name reaches the same repl
// owner across restarts of the host. Two live owners of one name would silently share
// sessions, so a second one is refused here; a disposed owner's calls fail here with
// OWNER_NOT_LIVE instead of reaching the repl, where its label would name a fresh owner.
import { DshptyError } from './errors.js';

const issuer = new WeakMap<DshptyOwner, OwnerRegistry>();

/** An acting identity. Mint with `service.mintOwner(name)`; its name is its repl label. */
export class DshptyOwner {
  /** @internal */
  constructor(readonly name: string) {}
}

type OwnerState = 'live' | 'disposing';

export class OwnerRegistry {
  private readonly byName = new Map<string, { owner: DshptyOwner; state: OwnerState }>();

  mint(name: string): DshptyOwner {
    if (typeof name !== 'string' || name.length === 0)
      throw new DshptyError('INVALID_ARGUMENT', 'an owner name must be a non-empty string');
    const existing = this.byName.get(name);
    if (existing)
      throw new DshptyError('INVALID_ARGUMENT',
        existing.state === 'live' ? `owner "${name}" is already live in this service`
                                  : `owner "${name}" is still being disposed`);
    const owner = new DshptyOwner(name);
    issuer.set(owner, this);
    this.byName.set(name, { owner, state: 'live' });
    return owner;
  }

  /** The label to send for a live owner of this registry; throws OWNER_NOT_LIVE otherwise. */
  label(owner: DshptyOwner): string {
    const entry = owner instanceof DshptyOwner && issuer.get(owner) === this ? this.byName.get(owner.name) : undefined;
    if (!entry || entry.owner !== owner || entry.state !== 'live')
      throw new DshptyError('OWNER_NOT_LIVE', 'PTY owner is no longer live (disposed, or minted by another service)');
    return owner.name;
  }

  /** From now on the owner's calls fail; its name stays taken until `release`. */
  beginDispose(owner: DshptyOwner): string {
    const label = this.label(owner);
    this.byName.get(label)!.state = 'disposing';
    return label;
  }

  release(owner: DshptyOwner): void {
    if (this.byName.get(owner.name)?.owner === owner) this.byName.delete(owner.name);
  }
}
