/**
 * The typed map of every cross-service action: name → [params, result]. Callers use `call()`, so a change
 * of a contract breaks the compile of both sides.
 */
import type { CallingOptions } from "moleculer";
import type {
  CreateApiKeyParams,
  CreateApiKeyResult,
  IssueTokensParams,
  JwksResult,
  RefreshParams,
  RevokeApiKeyParams,
  TokenSet,
  VerifyApiKeyParams,
  VerifyApiKeyResult,
  VerifyTokenParams,
  VerifyTokenResult,
} from "./auth";
import type {
  JobParams,
  MulticastAccepted,
  NotificationJob,
  SendMulticastCall,
  StageRecipientsParams,
  StagedRecipients,
} from "./notifier";
import type { Round } from "./round";
import type { AppSettingsParams, AppSettingsResult, PlatformVersions, SetVersionsParams } from "./settings";
import type { CreateRoundParams, GetRoundParams, JoinRoundParams, QuestionInfo } from "./rounds";
import type {
  CreateItemParams,
  CreateStoreParams,
  GetItemParams,
  ItemInfo,
  StoreInfo,
  CreateEventParams,
  EventPermissionParams,
  MediaParams,
  ReleaseEventKeyParams,
  StoreEvent,
} from "./stores";
import type {
  AddFriendsParams,
  AreFriendsParams,
  CreateUserParams,
  AddDeviceParams,
  DeviceTokensParams,
  DeviceTokensResult,
  PruneTokensParams,
  ImportDevicesParams,
  Friend,
  Payment,
  ProfilesParams,
  ProfilesResult,
  RemoveUserParams,
  StatusParams,
  StatusResult,
  UserProfile,
} from "./users";

export interface ActionContracts {
  "auth.verifyAccessToken": [VerifyTokenParams, VerifyTokenResult];
  "auth.issueTokens": [IssueTokensParams, TokenSet];
  "auth.jwks": [Record<string, never>, JwksResult];
  "auth.verifyApiKey": [VerifyApiKeyParams, VerifyApiKeyResult];
  "auth.refresh": [RefreshParams, TokenSet];
  "auth.createApiKey": [CreateApiKeyParams, CreateApiKeyResult];
  "auth.revokeApiKey": [RevokeApiKeyParams, { revoked: boolean }];
  "users.profiles": [ProfilesParams, ProfilesResult];
  "users.status": [StatusParams, StatusResult];
  "users.areFriends": [AreFriendsParams, boolean];
  "users.create": [CreateUserParams, UserProfile];
  "users.remove": [RemoveUserParams, UserProfile];
  "users.addFriends": [AddFriendsParams, { created: boolean }];
  // Longer than a page (shared/contracts/paging): a stream of the list's JSON (shared/runtime/list-answer).
  "users.friends": [Record<string, never>, Friend[] | import("node:stream").Readable];
  "users.payments": [Record<string, never>, Payment[] | import("node:stream").Readable];
  "stores.item": [GetItemParams, ItemInfo];
  "stores.createStore": [CreateStoreParams, StoreInfo & { manager_ids: string[] }];
  "stores.createItem": [CreateItemParams, ItemInfo];
  "settings.appSettings": [AppSettingsParams, AppSettingsResult];
  "settings.setVersions": [SetVersionsParams, PlatformVersions];
  "notifier.sendMulticast": [SendMulticastCall, MulticastAccepted];
  "notifier.stageRecipients": [StageRecipientsParams, StagedRecipients];
  "notifier.job": [JobParams, NotificationJob];
  "users.addDevice": [AddDeviceParams, { user_id: string; token: string }];
  "users.deviceTokens": [DeviceTokensParams, DeviceTokensResult];
  "users.pruneTokens": [PruneTokensParams, { pruned: number }];
  "users.importDevices": [ImportDevicesParams, { added: number }];
  "rounds.get": [GetRoundParams, Round];
  "rounds.join": [JoinRoundParams, Round];
  "rounds.create": [CreateRoundParams, { id: string; uniq_id: string }];
  "rounds.pickQuestion": [Record<string, never>, QuestionInfo];
  "stores.checkEventPermission": [EventPermissionParams, { store_id: number }];
  "stores.releaseEventKey": [ReleaseEventKeyParams, { released: boolean }];
  "stores.createEvent": [CreateEventParams, StoreEvent];
  "stores.discardStaged": [{ staged_id: string }, { discarded: boolean }];
  "stores.media": [MediaParams, import("node:stream").Readable];
}

export type ActionName = keyof ActionContracts;
export type ParamsOf<N extends ActionName> = ActionContracts[N][0];
export type ResultOf<N extends ActionName> = ActionContracts[N][1];

/** Anything that can call an action: a Context or a ServiceBroker. */
interface Caller {
  call(name: string, params?: unknown, opts?: CallingOptions): Promise<unknown>;
}

export function call<N extends ActionName>(
  via: Caller,
  name: N,
  params: ParamsOf<N>,
  opts?: CallingOptions,
): Promise<ResultOf<N>> {
  return via.call(name, params, opts) as Promise<ResultOf<N>>;
}

export const Events = {
  apiKeyRevoked: "api-key.revoked",
  roundMemberJoined: "round.member.joined",
  storeEventCreated: "store.event.created",
  userRemoved: "user.removed",
  userListsChanged: "user.lists.changed",
} as const;
