/** What a per-kind validator may need to know about the object besides its spec. */
export interface ObjectContext {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}
