/**
 * Creating a store event (§4.4): check the store and its manager, validate the form, move the staged
 * picture into place, write the event item, announce it. Any failure undoes what was done so far: no
 * picture, no item, no half-created event is left behind. With an Idempotency-Key the item's id is the
 * key's (docs/decisions/0023), so its insert is the one moment the event exists: a retry finds it and
 * gets its answer again, and two copies of one request racing cannot both insert.
 */
import type { StoreEvent, StoreEventCreatedEvent } from "../../shared/contracts/stores";
import { eventRoundId, type QuestionInfo } from "../../shared/contracts/rounds";
import {
  ForbiddenError,
  IdempotencyKeyBusyError,
  NotFoundError,
  RequestValidationError,
  type ValidationIssue,
} from "../../shared/errors";
import { formatMoney, sellerType } from "../../shared/format";
import { outboxEntry, type PendingEntry } from "../../shared/outbox";
import { Channels } from "../../shared/runtime/channels";
import { DuplicateKeyError } from "../../shared/storage";
import type { TraceContext } from "../../shared/tracing/propagation";
import type { BlobStore } from "./blob-store";
import { parseEventForm, type EventInput } from "./event-form";
import { eventRequestHash, keyReused } from "./event-replay";
import type { ImageMime } from "./image-type";
import type { ItemDoc, StoreDoc, StoresRepository } from "./stores.repository";

export interface StoreEventsDeps {
  repo: Pick<StoresRepository, "findStore" | "findItem" | "createEventItem" | "deleteItem">;
  blobs: Pick<BlobStore, "commit" | "discard" | "remove">;
  pickQuestion(): Promise<QuestionInfo>;
  /**
   * The event item is stored with `store.event.created` in its outbox: hand it to its channel. Never
   * fails the request: what is not published now is by the relay.
   */
  announce(pending: PendingEntry): Promise<void>;
  /**
   * The id of the event this user's Idempotency-Key creates (or created), from the key's record; null
   * when the record is gone (the request outlived the key). Needed only for requests with a key.
   */
  eventIdOfKey?(userId: string, key: string): Promise<string | null>;
  /** Absolute base for links ("" keeps them relative). */
  publicUrl: string;
  now(): Date;
}

export interface CreateEventInput {
  storeId: string;
  userId: string;
  fields: Record<string, string>;
  picture: { staged_id: string; size: number; mime: string | null; sha256?: string } | null;
  /** The request's Idempotency-Key (docs/decisions/0023). */
  idempotencyKey?: string;
  /** The request's trace, recorded with `store.event.created` (tracing on only). */
  trace?: TraceContext;
}

/** An event and whether it was made by an earlier request with the same Idempotency-Key. */
export interface CreatedEvent {
  event: StoreEvent;
  replayed: boolean;
}

/** With an Idempotency-Key: the id the key's event has, and this request's fingerprint. */
interface Once {
  key: string;
  eventId: string;
  requestHash: string;
}

const accepted: ImageMime[] = ["image/jpeg", "image/png", "image/webp"];

/** 404 for a store that does not exist (ids are integers: anything else is simply not found), 403 for non-managers. */
export async function managedStore(
  repo: Pick<StoresRepository, "findStore">,
  storeId: string,
  userId: string,
): Promise<StoreDoc> {
  const id = /^\d{1,15}$/.test(storeId) ? Number(storeId) : NaN;
  const store = Number.isSafeInteger(id) ? await repo.findStore(id) : null;
  if (!store) throw new NotFoundError("Store not found");
  if (!store.manager_ids.includes(userId)) throw new ForbiddenError("Not enough permissions");
  return store;
}

function checkForm(input: CreateEventInput, now: Date): { form: EventInput; mime: ImageMime } {
  const parsed = parseEventForm(input.fields, now);
  const issues: ValidationIssue[] = parsed.ok ? [] : [...parsed.issues];
  const p = input.picture;
  if (!p || p.size === 0) {
    issues.push({ type: "missing", loc: ["main_picture"], msg: "Field required", input: null });
  } else if (!accepted.includes(p.mime as ImageMime)) {
    issues.push({
      type: "value_error",
      loc: ["main_picture"],
      msg: "Value error, main_picture must be a JPEG, PNG or WebP image",
      input: null,
    });
  }
  if (!parsed.ok || issues.length > 0) throw new RequestValidationError(issues);
  return { form: parsed.value, mime: p?.mime as ImageMime };
}

export async function createStoreEvent(deps: StoreEventsDeps, input: CreateEventInput): Promise<StoreEvent> {
  return (await createOrReplayStoreEvent(deps, input)).event;
}

/**
 * Creates the event; with an Idempotency-Key whose event exists already, answers that event instead
 * (the same request) or refuses with 422 (another request), keeping nothing of this one. The check
 * comes before the form's: a replay is answered even when its start time has passed meanwhile.
 */
export async function createOrReplayStoreEvent(
  deps: StoreEventsDeps,
  input: CreateEventInput,
): Promise<CreatedEvent> {
  let store: StoreDoc;
  let once: Once | null = null;
  try {
    store = await managedStore(deps.repo, input.storeId, input.userId);
    if (input.idempotencyKey !== undefined) {
      once = await onceOf(deps, input, store);
      const earlier = await deps.repo.findItem(once.eventId);
      if (earlier) {
        await discardStaged(deps, input);
        return replayOf(earlier, store, once, deps.publicUrl);
      }
    }
  } catch (err) {
    await discardStaged(deps, input);
    throw err;
  }
  try {
    return { event: await insertEvent(deps, input, store, once), replayed: false };
  } catch (err) {
    // A twin request with the same key (both hold the event's id) wrote the event first: this one is
    // its replay, or another request. Its own picture is gone already (insertEvent undoes itself).
    const earlier = once && err instanceof DuplicateKeyError ? await deps.repo.findItem(once.eventId) : null;
    if (!earlier || !once) throw err;
    return replayOf(earlier, store, once, deps.publicUrl);
  }
}

async function onceOf(deps: StoreEventsDeps, input: CreateEventInput, store: StoreDoc): Promise<Once> {
  const key = input.idempotencyKey as string;
  const eventId = deps.eventIdOfKey ? await deps.eventIdOfKey(input.userId, key) : null;
  // The key's record outlives every request that holds it; gone, this request outlived its hold.
  if (!eventId) throw new IdempotencyKeyBusyError();
  return { key, eventId, requestHash: eventRequestHash(store._id, input.fields, input.picture) };
}

function replayOf(item: ItemDoc, store: StoreDoc, once: Once, publicUrl: string): CreatedEvent {
  if (item.event?.request_hash !== once.requestHash) throw keyReused(once.key);
  return { event: toStoreEventView(item, store, publicUrl), replayed: true };
}

async function discardStaged(deps: StoreEventsDeps, input: CreateEventInput): Promise<void> {
  if (input.picture) await deps.blobs.discard(input.picture.staged_id).catch(() => undefined);
}

/** Validates, moves the picture into place and writes the item; any failure undoes what was done. */
async function insertEvent(
  deps: StoreEventsDeps,
  input: CreateEventInput,
  store: StoreDoc,
  once: Once | null,
): Promise<StoreEvent> {
  let pictureName: string | null = null;
  let item: ItemDoc | null = null;
  try {
    const now = deps.now();
    const { form, mime } = checkForm(input, now);
    const question = await deps.pickQuestion();
    pictureName = await deps.blobs.commit((input.picture as { staged_id: string }).staged_id, mime);
    const created = await deps.repo.createEventItem(
      {
        store,
        form,
        question,
        pictureName,
        createdBy: input.userId,
        ...(once ? { id: once.eventId, requestHash: once.requestHash } : {}),
      },
      now,
      (doc) => {
        const event = createdEvent(doc, store, form, toStoreEventView(doc, store, deps.publicUrl));
        return [outboxEntry(Channels.storeEventCreated, doc._id, event, now, input.trace)];
      },
    );
    item = created;
    const [entry] = Object.values(created.outbox ?? {});
    if (entry) await deps.announce({ docId: created._id, entry });
    return toStoreEventView(created, store, deps.publicUrl);
  } catch (err) {
    // Each undo step on its own: one failing must not skip the others nor hide the original error.
    const undo = async (step: () => Promise<void>) => step().catch(() => undefined);
    if (item) await undo(() => deps.repo.deleteItem((item as ItemDoc)._id));
    if (pictureName) await undo(() => deps.blobs.remove(pictureName as string));
    else await discardStaged(deps, input);
    throw err;
  }
}

export const mediaUrl = (publicUrl: string, name: string): string =>
  `${publicUrl.replace(/\/$/, "")}/media/${name}`;

export function toStoreEventView(item: ItemDoc, store: StoreDoc, publicUrl: string): StoreEvent {
  const e = item.event;
  if (!e) throw new Error(`Item ${item._id} is not an event`);
  return {
    id: item._id,
    name: item.name,
    price: e.price,
    start_time: new Date(item.start_time as Date).toISOString(),
    end_time: new Date(e.end_time).toISOString(),
    duration: item.duration as number,
    event_type: item.event_type as string,
    participants_limit: item.participants_limit as number,
    is_active: e.is_active,
    store: {
      id: store._id,
      name: store.name,
      is_blogger: store.is_blogger,
      seller_type: sellerType(store),
      logo_url: store.logo_url,
    },
    short_desc: item.short_desc,
    detail_desc: item.detail_desc,
    format_price: formatMoney(e.price, store.currency),
    platform_price: item.platform_price,
    meeting_link: item.meeting_link,
    meeting_password: item.meeting_password,
    meeting_platform: item.meeting_platform,
    cover_picture_url: mediaUrl(publicUrl, e.cover_picture),
    question_id: e.question_id,
    location: item.location
      ? {
          address: item.location.address,
          country: item.location.country ?? null,
          city: item.location.city ?? null,
        }
      : null,
    round_id: eventRoundId(item._id),
  };
}

function createdEvent(
  item: ItemDoc,
  store: StoreDoc,
  form: EventInput,
  view: StoreEvent,
): StoreEventCreatedEvent {
  return {
    event_id: item._id,
    round_id: view.round_id,
    store_id: store._id,
    owner_id: (item.event as NonNullable<ItemDoc["event"]>).created_by,
    price: view.price,
    currency: store.currency,
    start_time: view.start_time,
    end_time: view.end_time,
    participants_limit: view.participants_limit,
    discount_percent: form.discount_percent,
    question_id: view.question_id,
    is_active: view.is_active,
    store_name: store.name,
    location:
      form.address !== null && form.latitude !== null && form.longitude !== null
        ? {
            address: form.address,
            city: form.city,
            country: form.country,
            postal_code: form.postal_code,
            latitude: form.latitude,
            longitude: form.longitude,
          }
        : null,
  };
}
