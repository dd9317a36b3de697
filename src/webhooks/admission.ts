// The admission webhook server maps paths (/validate, /inject) to
// AdmissionHandlers. Shapes follow Kubernetes' admission.k8s.io AdmissionReview request/response.

export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
  userInfo?: { username?: string; groups?: string[] };
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; message?: string; reason?: string };
  warnings?: string[];
  patch?: string /* base64 JSONPatch */;
  patchType?: 'JSONPatch';
}

export type AdmissionHandler = (req: AdmissionRequest) => AdmissionResponse | Promise<AdmissionResponse>;
