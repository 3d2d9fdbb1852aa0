/**
 * The Juegoland client library: the protocol's generated types, the transports and
 * `MatchClient` (sync barrier, pending command, reconnection). The presentation coordinator
 * is in `../present`.
 */
export * from "../protocol/generated";
export * from "./client";
export * from "./clock";
export * from "./pending";
export * from "./transport";
export * from "./http";
export * from "./servertime";
