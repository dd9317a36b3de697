/** The public surface of src/install: what other folders import (SURFACE in scripts/layers.ts). */
export {
  applyInstall,
  hasInstall,
  InstallApplyError,
  InstallValidationError,
  type ObjectChange,
  uninstall,
  uninstallPlan,
  verifyInstall,
} from './apply.js';
export { componentOf, revisionLabelValue } from './inventory.js';
export { describeRef, type InstallObject, refOfServerObject } from './objects.js';
export { Progress } from './progress.js';
export { formatManifest, type InstallRenderOptions, type RenderedObject, renderInstall } from './render.js';
export { formatChanges } from './report.js';
