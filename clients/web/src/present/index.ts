export * from "./coordinator";
export * from "./plan";
export * from "./audio";
export * from "./resources";
export * from "./cardart";
