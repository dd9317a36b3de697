/**
 * Addresses for ServiceEntry hosts that have none, as istiod's ServiceEntry registry allocates
 * them (pilot/pkg/serviceregistry/serviceentry/auto_allocation.go, the allocation istiod uses when
 * its IP-allocation controller is off): from the Class E range 240.240.0.0/16 and the benchmarking
 * range 2001:2::/48, one slot per `namespace/hostname` chosen by FNV-1a with double hashing, so
 * every control plane computes the same addresses for the same config. A proxy that captures DNS
 * can then be answered with an address that its listeners know, for hosts that have no real one.
 */
import { isWildcard } from '../config/index.js';
import type { Service } from './model.js';

/** Slots: 254 addresses per /24 (no .0, no .255) × 256. */
const MAX_IPS = 256 * 254;
/** The largest prime below MAX_IPS, for the second hash. */
const PRIME = 65011;

/** 32-bit FNV-1a of the UTF-8 bytes of `s` (Go's hash/fnv New32a). */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(s, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** A host gets an address when it has none, is not a wildcard, and is resolved (not NONE). */
function eligible(s: Service): boolean {
  return s.addresses.length === 0 && !isWildcard(s.hostname) && s.resolution !== 'NONE';
}

const keyOf = (s: Service): string => `${s.namespace}/${s.hostname}`;

/** The hash of a service's key, once per service object (a registry keeps the objects of unchanged entries). */
const hashes = new WeakMap<Service, number>();
function slotHash(svc: Service): number {
  let h = hashes.get(svc);
  if (h === undefined) hashes.set(svc, (h = fnv1a32(keyOf(svc))));
  return h;
}

/** Addresses by position, spelled once per process (at most one per slot). */
const spelled: Array<{ v4: string; v6: string } | undefined> = [];

/** The IPv4 and IPv6 address of one slot position (istiod's setAutoAllocatedIPs). */
function addressesAt(x: number): { v4: string; v6: string } {
  let addrs = spelled[x];
  if (addrs === undefined) {
    const third = Math.floor(x / 255);
    const fourth = x % 255;
    const hex = (n: number): string => n.toString(16);
    addrs = {
      v4: `240.240.${third}.${fourth}`,
      v6: third === 0 ? `2001:2::f0f0:${hex(fourth)}` : `2001:2::f0f0:${hex(third)}${hex(fourth)}`,
    };
    spelled[x] = addrs;
  }
  return addrs;
}

/**
 * The services with `autoAllocated` set on the eligible ones (copies; the others are returned as
 * they are). Collisions move a host to the next free slot of its second hash, in list order; past
 * 65,024 eligible hosts the rest get nothing (istiod logs the same).
 */
export function autoAllocateAddresses(services: readonly Service[]): Service[] {
  // Service index per slot, -1 when free (a typed array: no 65k-element array on the JS heap per build).
  const slots = new Int32Array(MAX_IPS).fill(-1);
  let placed = 0;
  services.forEach((svc, idx) => {
    if (!eligible(svc) || placed >= MAX_IPS) return;
    const s = slotHash(svc);
    let slot = s % MAX_IPS;
    if (slots[slot] !== -1) {
      // Go's uint32 arithmetic: the probe wraps at 2^32 before the modulo.
      const second = PRIME - (s % PRIME);
      for (let i = 1; ; i++) {
        slot = ((s + Math.imul(i, second)) >>> 0) % (MAX_IPS - 1);
        if (slots[slot] === -1) break;
      }
    }
    slots[slot] = idx;
    placed++;
  });
  const out = [...services];
  const byKey = new Map<string, { v4: string; v6: string }>();
  let x = 0;
  for (let pos = 0; pos < MAX_IPS; pos++) {
    const idx = slots[pos]!;
    x++;
    if (idx === -1) continue;
    // Never .0 of a /24: position 510 would be 240.240.2.0, so it moves on to .1 (and so do the
    // later ones, as in istiod).
    if (x % 255 === 0) x++;
    const svc = services[idx]!;
    const key = keyOf(svc);
    let addrs = byKey.get(key);
    if (!addrs) byKey.set(key, (addrs = addressesAt(x)));
    out[idx] = withAddresses(svc, addrs);
  }
  return out;
}

/** The copy made last time for this service object, while its addresses stay the same (identities stay stable across builds). */
const allocatedCopies = new WeakMap<Service, Service>();

function withAddresses(svc: Service, addrs: { v4: string; v6: string }): Service {
  const last = allocatedCopies.get(svc);
  if (last?.autoAllocated === addrs) return last;
  const copy = { ...svc, autoAllocated: addrs };
  allocatedCopies.set(svc, copy);
  return copy;
}
