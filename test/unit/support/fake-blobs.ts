/** Blob storage for the store-event tests: a pair of sets, what is staged and what is committed. */
import { randomUUID } from "node:crypto";
import { extensionOf, type ImageMime } from "../../../services/stores/image-type";

export class FakeBlobs {
  readonly staged = new Set<string>();
  readonly committed = new Set<string>();
  failCommit: Error | null = null;

  stageOne(): string {
    const id = randomUUID();
    this.staged.add(id);
    return id;
  }

  commit = jest.fn(async (stagedId: string, mime: ImageMime): Promise<string> => {
    if (this.failCommit) throw this.failCommit;
    if (!this.staged.delete(stagedId)) throw new Error(`Nothing staged as ${stagedId}`);
    const name = `${randomUUID()}.${extensionOf[mime]}`;
    this.committed.add(name);
    return name;
  });

  discard = jest.fn(async (stagedId: string): Promise<void> => {
    this.staged.delete(stagedId);
  });

  remove = jest.fn(async (name: string): Promise<void> => {
    this.committed.delete(name);
  });
}
