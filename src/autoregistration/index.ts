/** The public surface of src/autoregistration (SURFACE in scripts/layers.ts). */
export {
  WorkloadEntryController,
  type AutoRegistrationStats,
  type VerifiedIdentity,
  type WorkloadConnection,
  type WorkloadEntryControllerOptions,
} from './controller.js';
export { type EntryObject, type WorkloadEntryStore } from './entry-store.js';
export { MemoryWorkloadEntryStore } from './memory-store.js';
