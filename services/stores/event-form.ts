/**
 * The multipart form of POST /stores/{store_id}/events (§4.4): every value arrives as text and is
 * coerced to its target type here. All problems are reported at once, in FastAPI's shape, with `loc`
 * relative to the body. Which fields are required is our decision (docs/decisions/0023-store-event-form.md).
 */
import type { ValidationIssue } from "../../shared/errors";

export interface EventInput {
  name: string;
  price: number;
  event_type: "online" | "offline";
  is_active: boolean;
  discount_percent: number;
  duration: number;
  participants_limit: number;
  short_desc: string | null;
  detail_desc: string | null;
  start_time: Date;
  city: string | null;
  address: string | null;
  postal_code: string | null;
  country: string | null;
  latitude: number | null;
  longitude: number | null;
  meeting_link: string | null;
  meeting_password: string | null;
  meeting_platform: string | null;
}

/** The form's text fields, in the spec's order, plus the optional meeting details. */
export const formFields = [
  "name",
  "price",
  "event_type",
  "is_active",
  "discount_percent",
  "duration",
  "participants_limit",
  "short_desc",
  "detail_desc",
  "start_time",
  "city",
  "address",
  "postal_code",
  "country",
  "latitude",
  "longitude",
  "meeting_link",
  "meeting_password",
  "meeting_platform",
] as const;

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;

/** Date.parse turns 2030-02-30 into 2 March; a day the month does not have is an error. */
function calendarDateExists(iso: string): boolean {
  const [y, m, d] = iso.slice(0, 10).split("-").map(Number);
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

class Form {
  readonly issues: ValidationIssue[] = [];
  constructor(private readonly raw: Record<string, string>) {}

  private issue(field: string, type: string, msg: string): null {
    this.issues.push({ type, loc: [field], msg, input: this.raw[field] ?? null });
    return null;
  }

  /** The trimmed value, or null when absent or blank (then a required field is reported missing). */
  text(field: string, opts: { required?: boolean; max?: number } = {}): string | null {
    const value = this.raw[field]?.trim();
    if (!value) return opts.required ? this.issue(field, "missing", "Field required") : null;
    if (opts.max !== undefined && value.length > opts.max) {
      return this.issue(field, "string_too_long", `String should have at most ${opts.max} characters`);
    }
    return value;
  }

  number(
    field: string,
    opts: { required?: boolean; min?: number; max?: number; exclusiveMin?: boolean } = {},
  ) {
    const value = this.text(field, opts);
    if (value === null) return null;
    if (!NUMBER.test(value) || !Number.isFinite(Number(value))) {
      return this.issue(
        field,
        "float_parsing",
        "Input should be a valid number, unable to parse string as a number",
      );
    }
    return this.range(field, Number(value), opts);
  }

  integer(
    field: string,
    opts: { required?: boolean; min?: number; max?: number; exclusiveMin?: boolean } = {},
  ) {
    const value = this.text(field, opts);
    if (value === null) return null;
    if (!INTEGER.test(value)) {
      return this.issue(
        field,
        "int_parsing",
        "Input should be a valid integer, unable to parse string as an integer",
      );
    }
    return this.range(field, Number(value), opts);
  }

  private range(field: string, n: number, opts: { min?: number; max?: number; exclusiveMin?: boolean }) {
    if (opts.min !== undefined && (opts.exclusiveMin ? n <= opts.min : n < opts.min)) {
      return opts.exclusiveMin
        ? this.issue(field, "greater_than", `Input should be greater than ${opts.min}`)
        : this.issue(field, "greater_than_equal", `Input should be greater than or equal to ${opts.min}`);
    }
    if (opts.max !== undefined && n > opts.max) {
      return this.issue(field, "less_than_equal", `Input should be less than or equal to ${opts.max}`);
    }
    return n;
  }

  boolean(field: string, fallback: boolean): boolean {
    const value = this.text(field);
    if (value === null) return fallback;
    if (/^(true|1)$/i.test(value)) return true;
    if (/^(false|0)$/i.test(value)) return false;
    this.issue(field, "bool_parsing", "Input should be a valid boolean, unable to interpret input");
    return fallback;
  }

  dateTime(field: string, now: Date): Date | null {
    const value = this.text(field, { required: true });
    if (value === null) return null;
    const ms = Date.parse(value);
    if (!ISO_WITH_OFFSET.test(value) || Number.isNaN(ms) || !calendarDateExists(value)) {
      return this.issue(
        field,
        "datetime_parsing",
        "Input should be a valid ISO 8601 date-time with a time zone offset",
      );
    }
    if (ms <= now.getTime())
      return this.issue(field, "value_error", "Value error, start_time must be in the future");
    return new Date(ms);
  }

  oneOf<T extends string>(field: string, values: readonly T[]): T | null {
    const value = this.text(field, { required: true });
    if (value === null) return null;
    if ((values as readonly string[]).includes(value)) return value as T;
    return this.issue(field, "enum", `Input should be ${values.map((v) => `'${v}'`).join(" or ")}`);
  }

  url(field: string): string | null {
    const value = this.text(field, { max: 2048 });
    if (value === null) return null;
    try {
      const u = new URL(value);
      if (u.protocol === "http:" || u.protocol === "https:") return value;
    } catch {
      // reported below
    }
    return this.issue(field, "url_scheme", "URL scheme should be 'http' or 'https'");
  }
}

export function parseEventForm(
  raw: Record<string, string>,
  now: Date,
): { ok: true; value: EventInput } | { ok: false; issues: ValidationIssue[] } {
  const f = new Form(raw);
  const eventType = f.oneOf("event_type", ["online", "offline"] as const);
  const offline = eventType === "offline";
  const value = {
    name: f.text("name", { required: true, max: 200 }),
    price: f.number("price", { required: true, min: 0, max: 100_000_000 }),
    event_type: eventType,
    is_active: f.boolean("is_active", true),
    discount_percent: f.number("discount_percent", { min: 0, max: 100 }) ?? 0,
    duration: f.integer("duration", { required: true, min: 0, exclusiveMin: true, max: 7 * 24 * 60 }),
    participants_limit: f.integer("participants_limit", { required: true, min: 1, max: 100_000 }),
    short_desc: f.text("short_desc", { max: 500 }),
    detail_desc: f.text("detail_desc", { max: 5000 }),
    start_time: f.dateTime("start_time", now),
    // An offline event needs a place; an online one may still name a city.
    city: f.text("city", { required: offline, max: 200 }),
    address: f.text("address", { required: offline, max: 500 }),
    postal_code: f.text("postal_code", { max: 20 }),
    country: f.text("country", { max: 100 }),
    latitude: f.number("latitude", { required: offline, min: -90, max: 90 }),
    longitude: f.number("longitude", { required: offline, min: -180, max: 180 }),
    meeting_link: f.url("meeting_link"),
    meeting_password: f.text("meeting_password", { max: 100 }),
    meeting_platform: f.text("meeting_platform", { max: 100 }),
  };
  if (f.issues.length > 0) return { ok: false, issues: f.issues };
  return { ok: true, value: value as EventInput };
}
