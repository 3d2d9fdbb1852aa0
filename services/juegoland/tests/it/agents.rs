//! AI agents as players, through the real `juegoland` binary over real sockets: the platform
//! creates a match with an agent seat (`{"agent": "default"}`) and grants it
//! (`POST /v1/matches/{id}/agents`); a scripted MCP client (rmcp's client over streamable HTTP,
//! no model: it chooses among `legal_actions`) plays whole Conecta 4 and Hundido matches
//! against the built-in bot; an agent plays over plain WebSocket too; the grant is scoped to
//! one seat of one match; malformed and illegal tool calls get the protocol's typed errors; the
//! declared commands per minute hold. What an agent reads is the seat's projection only, the
//! very snapshot a WebSocket client at that seat gets.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};

use crate::client::{Client, Server, http_raw, uuid};
use crate::spectators::sync;

async fn create(server: &Server, game: &str, seats: Value, config: Value) -> String {
    let (status, body) =
        server.http("POST", "/v1/matches", Some(json!({ "game": game, "seats": seats, "config": config }))).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().expect("matchId").to_owned()
}

/// The platform's grant of `seat` of `match_id`: the whole answer.
async fn grant(server: &Server, match_id: &str, seat: &str) -> Value {
    let (status, body) =
        server.http("POST", &format!("/v1/matches/{match_id}/agents"), Some(json!({ "seat": seat }))).await;
    assert_eq!(status, 201, "{body}");
    body
}

/// A scripted MCP client of one agent seat (also the authorization matrix's, `authz.rs`).
pub(crate) struct Agent {
    pub(crate) client: RunningService<RoleClient, ClientConfig>,
}

impl Agent {
    async fn connect(server: &Server, token: &str) -> Agent {
        Agent::connect_to(&server.addr.to_string(), token).await
    }

    /// An MCP session with the server at `addr` (`host:port`).
    pub(crate) async fn connect_to(addr: &str, token: &str) -> Agent {
        let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/v1/mcp")).auth_header(token);
        let transport = StreamableHttpClientTransport::from_config(config);
        let client = ClientConfig::default().serve(transport).await.expect("an MCP session");
        Agent { client }
    }

    /// A tool's structured result: `Ok` for a result, `Err` for a tool error.
    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Result<Value, Value> {
        let Value::Object(arguments) = arguments else { panic!("tool arguments are an object") };
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let value = result.structured_content.unwrap_or(Value::Null);
        if result.is_error == Some(true) { Err(value) } else { Ok(value) }
    }

    async fn ok(&self, tool: &str, arguments: Value) -> Value {
        self.call(tool, arguments).await.unwrap_or_else(|e| panic!("{tool} failed: {e}"))
    }

    /// Plays `choose`'s pick among the legal actions until the match ends; answers the last
    /// view and every view seen on the way. A RATE_LIMITED play is waited out, as its recovery
    /// says (the same action again).
    async fn play_to_the_end(&self, mut choose: impl FnMut(&Value, &[Value]) -> Value) -> (Value, Vec<Value>) {
        let mut views = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            assert!(Instant::now() < deadline, "the match did not end in time");
            let turn = self.ok("wait_for_turn", json!({ "timeoutMs": 20_000 })).await;
            views.push(turn.clone());
            if !turn["result"].is_null() {
                return (turn, views);
            }
            if turn["ready"] != true {
                continue;
            }
            let legal = self.ok("legal_actions", json!({})).await;
            let actions = legal["actions"].as_array().expect("actions").clone();
            assert!(!actions.is_empty(), "a ready seat has an offer: {turn}");
            let action = choose(&turn, &actions);
            loop {
                match self.call("play", action.clone()).await {
                    Ok(receipt) => {
                        assert_eq!(receipt["status"], "applied", "{receipt}");
                        break;
                    }
                    Err(e) if e["code"] == "RATE_LIMITED" => {
                        assert_eq!(e["recovery"], "retry-same-command", "{e}");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(e) => panic!("{action} was refused: {e}"),
                }
            }
        }
    }
}

/// A concrete offer as `play`'s arguments.
fn as_play(offer: &Value) -> Value {
    json!({ "type": offer["type"], "payload": offer["payload"] })
}

#[tokio::test]
async fn an_mcp_agent_plays_a_whole_conecta4_match_against_the_bot() {
    let server = Server::start(&[]);
    let m = create(&server, "conecta4", json!({"p0": {"agent": "default"}, "p1": {"bot": "default"}}), json!({})).await;
    let granted = grant(&server, &m, "p0").await;
    assert_eq!((granted["seat"].as_str(), granted["principal"].as_str()), (Some("p0"), Some("agent:p0")));
    assert_eq!(granted["limits"], json!({"thinkTimeMs": 30000, "commandsPerMinute": 30}));
    assert!(granted["instructions"].as_str().unwrap().contains("row 0 being the BOTTOM row"), "{granted}");
    let agent = Agent::connect(&server, granted["token"].as_str().unwrap()).await;

    let tools: Vec<String> =
        agent.client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    assert_eq!(tools, ["instructions", "get_view", "legal_actions", "play", "wait_for_turn"]);
    let told = agent.ok("instructions", json!({})).await;
    assert_eq!((told["seat"].as_str(), told["game"]["id"].as_str()), (Some("p0"), Some("conecta4")));
    assert_eq!(told["instructions"], granted["instructions"]);
    assert_eq!(told["profile"]["modes"], json!(["versus"]));

    // Central columns first: a fair scripted player, whatever the bot does.
    let started = Instant::now();
    let (last, views) = agent
        .play_to_the_end(|_, actions| {
            let column = |a: &Value| a["payload"]["column"].as_i64().unwrap();
            as_play(actions.iter().min_by_key(|a| (column(a) - 3).abs()).unwrap())
        })
        .await;
    let elapsed = started.elapsed();
    assert_eq!(last["result"]["kind"], "completed", "{last}");
    let moves = views.iter().filter(|v| v["ready"] == true && v["result"].is_null()).count();
    eprintln!("conecta4 over MCP: {moves} agent moves in {elapsed:?}, {:?} per move", elapsed / moves.max(1) as u32);
    for v in &views {
        assert_eq!(v["seat"], "p0", "only the seat's own projection: {v}");
        assert_eq!(v["context"]["seat"], "p0");
        if v["yourTurn"] == true {
            assert!(v["thinkDeadlineMs"].as_u64().is_some(), "a turn has a think deadline: {v}");
        }
    }
    // Over: no offers, and `play` is refused with the match's own receipt.
    assert_eq!(last["actions"], json!([]));
    let refused = agent.call("play", json!({"type": "drop", "payload": {"column": 0}})).await.unwrap_err();
    assert_eq!(
        (refused["error"].as_str(), refused["code"].as_str()),
        (Some("rejected"), Some("MATCH_FINISHED")),
        "{refused}"
    );
    // The match reads its seats' controllers, and the metrics tell the agent's seat apart.
    let (_, summary) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
    assert_eq!(summary["seats"][0]["controller"], json!({"kind": "agent", "profile": "default"}), "{summary}");
    let (_, _, metrics) = http_raw(&server.addr.to_string(), "GET", "/metrics", b"").await;
    let series = |prefix: &str| metrics.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_owned();
    // Every move, and the refused one after the end: the match judged each.
    let judged = series("juegoland_seat_commands_total{controller=\"agent\"}");
    assert!(judged.ends_with(&format!(" {}", moves + 1)), "{judged} for {moves} moves");
    assert!(!series("juegoland_gateway_mcp_calls_total{outcome=\"ok\",tool=\"play\"}").ends_with(" 0"));
    assert!(!series("juegoland_agent_think_seconds_count").ends_with(" 0"));
}

#[tokio::test]
async fn an_mcp_agent_places_its_fleet_and_sinks_the_bot_s_in_hundido() {
    let server = Server::start(&[]);
    let config = json!({
        "rows": 6, "columns": 6,
        "fleet": [{"ship": "long", "size": 3}, {"ship": "mid", "size": 2}, {"ship": "dot", "size": 1}],
    });
    let m = create(&server, "hundido", json!({"p0": {"agent": "default"}, "p1": {"bot": "default"}}), config).await;
    let granted = grant(&server, &m, "p0").await;
    let agent = Agent::connect(&server, granted["token"].as_str().unwrap()).await;

    // The parametrized offers carry the JSON Schema of their payload.
    let legal = agent.ok("legal_actions", json!({})).await;
    let place =
        legal["actions"].as_array().unwrap().iter().find(|a| a["type"] == "placeShip").expect("placeShip").clone();
    assert_eq!(place["schema"], "urn:juegoland:game:hundido:action:placeShip:1");
    assert!(place["payloadSchema"]["properties"]["orientation"].is_object(), "{place}");
    assert!(place["payloadSchema"]["required"].as_array().unwrap().contains(&json!("ship")), "{place}");
    assert_eq!(place["constraints"]["rows"], 6);

    let (last, views) = agent
        .play_to_the_end(|turn, actions| {
            let offered = |t: &str| actions.iter().find(|a| a["type"] == t);
            if let Some(ready) = offered("ready") {
                return as_play(ready);
            }
            if offered("placeShip").is_some() {
                // Each unplaced ship on its own even row, from the left.
                let unplaced = turn["view"]["own"]["unplaced"].as_array().unwrap();
                let ship = &unplaced[0];
                let row = 2 * turn["view"]["own"]["ships"].as_array().unwrap().len();
                return json!({"type": "placeShip", "payload": {
                    "ship": ship["ship"], "row": row, "column": 0, "orientation": "horizontal"}});
            }
            // Fire at the first cell not fired at yet, row by row.
            let mine = turn["view"]["seats"].as_array().unwrap().iter().find(|s| s["seat"] == "p0").unwrap();
            let fired: Vec<(i64, i64)> = mine["shots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["row"].as_i64().unwrap(), s["column"].as_i64().unwrap()))
                .collect();
            let (row, column) = (0..6).flat_map(|r| (0..6).map(move |c| (r, c))).find(|c| !fired.contains(c)).unwrap();
            json!({"type": "fire", "payload": {"row": row, "column": column}})
        })
        .await;
    assert_eq!(last["result"]["kind"], "completed", "{last}");
    // The seat's projection only: its own fleet, and of the rival's only what was hit or sunk.
    for v in &views {
        assert_eq!(v["view"]["own"]["seat"], "p0", "{v}");
        let rival = v["view"]["seats"].as_array().unwrap().iter().find(|s| s["seat"] == "p1").unwrap().to_string();
        assert!(!rival.contains("orientation"), "a rival ship's placement: {rival}");
    }
    // Exactly what a WebSocket client at the seat gets: the same snapshot, byte for byte in
    // its view, context, offers and result.
    let mut ws = Client::connect_to(&server.addr.to_string(), granted["token"].as_str().unwrap()).await;
    let snapshot = ws.sync_answer_for(&m, "same", "hundido").await;
    let view = agent.ok("get_view", json!({})).await;
    assert_eq!(snapshot["revision"], view["revision"]);
    for field in ["view", "context", "result", "seat"] {
        assert_eq!(snapshot[field], view[field], "{field}");
    }
}

#[tokio::test]
async fn an_agent_plays_over_websocket_like_any_seat() {
    let server = Server::start(&[]);
    let m = create(&server, "conecta4", json!({"p0": {"bot": "default"}, "p1": {"agent": "default"}}), json!({})).await;
    let granted = grant(&server, &m, "p1").await;
    let mut ws = Client::connect_to(&server.addr.to_string(), granted["token"].as_str().unwrap()).await;
    let mut snapshot = ws.sync_answer_for(&m, "agent", "conecta4").await;
    loop {
        assert_eq!(snapshot["seat"], "p1", "{snapshot}");
        if !snapshot["result"].is_null() {
            break;
        }
        if let Some(offer) = snapshot["actions"].as_array().unwrap().first() {
            let command = json!({
                "protocolVersion": 1, "type": "game.command", "matchId": m, "commandId": uuid(),
                "precondition": offer["precondition"], "action": {"type": offer["type"], "payload": offer["payload"]},
            });
            ws.send(&command).await;
            let (ack, _) = ws.recv_type("game.ack").await;
            assert_eq!(ack["status"], "applied", "{ack}");
        }
        snapshot = ws.recv_type("game.snapshot").await.0;
        while let Some(newer) = ws.try_recv(30).await {
            if newer["type"] == "game.snapshot" {
                snapshot = newer;
            }
        }
    }
    assert_eq!(snapshot["result"]["kind"], "completed");
    let (_, _, metrics) = http_raw(&server.addr.to_string(), "GET", "/metrics", b"").await;
    assert!(
        metrics.lines().any(|l| l == "juegoland_gateway_subscriptions{controller=\"agent\",kind=\"seat\"} 1"),
        "the agent's subscription is counted as an agent's: {}",
        metrics.lines().filter(|l| l.contains("gateway_subscriptions")).collect::<Vec<_>>().join("\n")
    );
}

#[tokio::test]
async fn an_agent_grant_is_one_seat_of_one_match() {
    let server = Server::start(&[]);
    let seats = json!({"p0": "alice", "p1": {"agent": "default"}});
    let m = create(&server, "conecta4", seats.clone(), json!({})).await;
    let other = create(&server, "conecta4", json!({"p0": "bob", "p1": {"agent": "default"}}), json!({})).await;
    // Only an agent seat is granted, of a match that exists.
    let (status, body) = server.http("POST", &format!("/v1/matches/{m}/agents"), Some(json!({"seat": "p0"}))).await;
    assert_eq!(
        (status, body["code"].as_str(), body["field"].as_str()),
        (409, Some("NOT_AN_AGENT_SEAT"), Some("seat")),
        "{body}"
    );
    let (status, body) = server.http("POST", &format!("/v1/matches/{m}/agents"), Some(json!({"seat": "p7"}))).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("UNKNOWN_SEAT")), "{body}");
    let (status, _) = server.http("POST", &format!("/v1/matches/{}/agents", uuid()), Some(json!({"seat": "p1"}))).await;
    assert_eq!(status, 404);
    let (status, body) =
        server.http("POST", &format!("/v1/matches/{m}/agents"), Some(json!({"seat": "p1", "as": "p0"}))).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_REQUEST")), "{body}");
    // Creation refuses an undeclared profile, naming the seat, and a game with no agent seats.
    let (status, body) = server
        .http(
            "POST",
            "/v1/matches",
            Some(json!({"game": "conecta4", "seats": {"p0": "alice", "p1": {"agent": "oracle"}}})),
        )
        .await;
    assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_SEATS")), "{body}");
    assert!(body["message"].as_str().unwrap().starts_with("seats.p1: "), "{body}");
    assert_eq!(body["field"], "seats.p1", "{body}");
    let (status, body) = server
        .http(
            "POST",
            "/v1/matches",
            Some(json!({"game": "laberinto", "seats": {"p0": "alice", "p1": {"agent": "default"}}})),
        )
        .await;
    assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_SEATS")), "{body}");
    // The catalog shows each game's declaration, and that Laberinto has none.
    let (_, games) = server.http("GET", "/v1/games", None).await;
    let agents = |id: &str| games.as_array().unwrap().iter().find(|g| g["id"] == id).unwrap()["agents"].clone();
    assert_eq!(agents("laberinto"), Value::Null);
    for id in ["conecta4", "hundido", "solitario", "brisca", "oca", "serpientes"] {
        let declared = agents(id);
        assert!(declared["instructions"].as_str().is_some_and(|t| t.len() > 200), "{id}: {declared}");
        assert!(declared["profiles"][0]["limits"]["thinkTimeMs"].as_u64().is_some_and(|t| t > 0), "{id}: {declared}");
    }
    // Nor may a platform principal pose as an agent.
    let (status, _) = server.http("POST", "/v1/dev/tokens", Some(json!({"principal": "agent:p1"}))).await;
    assert_eq!(status, 400);

    let token = grant(&server, &m, "p1").await["token"].as_str().unwrap().to_owned();
    let mut ws = Client::connect_to(&server.addr.to_string(), &token).await;
    // Another match: refused at the gateway, whatever that match's seats are.
    ws.send(&sync(&other, "elsewhere", "conecta4")).await;
    let refused = ws.recv().await;
    assert_eq!(
        (refused["code"].as_str(), refused["messageKey"].as_str()),
        (Some("FORBIDDEN"), Some("error.forbidden.agent_scope"))
    );
    let elsewhere = json!({
        "protocolVersion": 1, "type": "game.command", "matchId": other, "commandId": uuid(),
        "precondition": {"kind": "match", "revision": 0}, "action": {"type": "drop", "payload": {"column": 3}},
    });
    ws.send(&elsewhere).await;
    assert_eq!(ws.recv().await["code"], "FORBIDDEN");
    // Its own match, as p1 only: p0's turn is not its to play.
    let snapshot = ws.sync_answer_for(&m, "mine", "conecta4").await;
    assert_eq!((snapshot["seat"].as_str(), snapshot["actions"].as_array().map(Vec::len)), (Some("p1"), Some(0)));
    let as_p0 = json!({
        "protocolVersion": 1, "type": "game.command", "matchId": m, "commandId": uuid(),
        "precondition": {"kind": "match", "revision": 0}, "action": {"type": "drop", "payload": {"column": 3}},
    });
    ws.send(&as_p0).await;
    let (ack, _) = ws.recv_type("game.ack").await;
    assert_eq!((ack["status"].as_str(), ack["code"].as_str()), (Some("rejected"), Some("ACTOR_NOT_ENABLED")), "{ack}");

    // The MCP server takes only an agent's grant, and it names its one seat.
    let human = server.token("alice").await;
    for (bearer, expected) in [(Some(human.as_str()), 403), (None, 401), (Some("not-a-token"), 401)] {
        let status = mcp_post(&server, bearer).await;
        assert_eq!(status, expected, "{bearer:?}");
    }
    let agent = Agent::connect(&server, &token).await;
    let view = agent.ok("get_view", json!({})).await;
    assert_eq!(
        (view["matchId"].as_str(), view["seat"].as_str(), view["yourTurn"].as_bool()),
        (Some(m.as_str()), Some("p1"), Some(false))
    );
}

/// An `initialize` POST to the MCP server with `bearer`: its HTTP status.
async fn mcp_post(server: &Server, bearer: Option<&str>) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    mcp_raw(server, bearer, body).await.0
}

/// A POST of `body` to the MCP server with `bearer`: its status line's code and the whole
/// answer (head and body) as text.
async fn mcp_raw(server: &Server, bearer: Option<&str>, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let auth = bearer.map(|b| format!("Authorization: Bearer {b}\r\n")).unwrap_or_default();
    let request = format!(
        "POST /v1/mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    (answer[9..12].parse().unwrap(), answer)
}

#[tokio::test]
async fn an_agent_of_an_older_mcp_version_needs_no_session_so_any_gateway_serves_it() {
    let server = Server::start(&[]);
    let m = create(&server, "conecta4", json!({"p0": "alice", "p1": {"agent": "default"}}), json!({})).await;
    let grant = grant(&server, &m, "p1").await;
    let token = grant["token"].as_str().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, answer) = mcp_raw(&server, Some(token), init).await;
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.to_ascii_lowercase().contains("mcp-session-id"), "a session was issued: {answer}");
    // A tool call with no session at all (as a request reaching another gateway would be)
    // is served.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_view","arguments":{}}}"#;
    let (status, answer) = mcp_raw(&server, Some(token), call).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains(m.as_str()) && answer.contains("yourTurn"), "{answer}");
}

#[tokio::test]
async fn malformed_and_illegal_tool_calls_get_the_protocol_s_typed_errors() {
    let server = Server::start(&[]);
    let m = create(&server, "conecta4", json!({"p0": "alice", "p1": {"agent": "default"}}), json!({})).await;
    let agent = Agent::connect(&server, grant(&server, &m, "p1").await["token"].as_str().unwrap()).await;
    let error = |e: Value| {
        (e["code"].as_str().unwrap_or_default().to_owned(), e["recovery"].as_str().unwrap_or_default().to_owned())
    };
    // Arguments that do not fit the tool: the protocol's MALFORMED_MESSAGE.
    let e = agent.call("play", json!({"type": "drop", "payload": {"column": 3}, "seat": "p0"})).await.unwrap_err();
    assert_eq!(error(e), ("MALFORMED_MESSAGE".into(), "none".into()));
    let e = agent.call("get_view", json!({"verbose": true})).await.unwrap_err();
    assert_eq!(error(e), ("MALFORMED_MESSAGE".into(), "none".into()));
    // A payload that is no object, and an action type over the protocol's 128 characters:
    // refused by the protocol's strict decoder, as on a socket.
    let e = agent.call("play", json!({"type": "drop", "payload": 3})).await.unwrap_err();
    assert_eq!(error(e).0, "MALFORMED_MESSAGE");
    let e = agent.call("play", json!({"type": "d".repeat(129)})).await.unwrap_err();
    assert_eq!(error(e).0, "MALFORMED_MESSAGE");
    // Not its turn, an action the game does not have, a payload outside the action's schema:
    // the match's own receipts.
    let rejected = |e: Value| (e["error"].as_str().unwrap().to_owned(), e["code"].as_str().unwrap().to_owned());
    let e = agent.call("play", json!({"type": "drop", "payload": {"column": 3}})).await.unwrap_err();
    assert_eq!(rejected(e), ("rejected".into(), "ACTOR_NOT_ENABLED".into()));
    let mut alice = server.connect("alice").await;
    alice.sync(&m, "a").await;
    alice.drop_disc(&m, &uuid(), 0, 3).await;
    let turn = agent.ok("wait_for_turn", json!({"timeoutMs": 5_000})).await;
    assert_eq!(turn["ready"], true, "{turn}");
    let e = agent.call("play", json!({"type": "fire", "payload": {"row": 1, "column": 1}})).await.unwrap_err();
    assert_eq!(rejected(e), ("rejected".into(), "UNKNOWN_ACTION".into()));
    let e = agent.call("play", json!({"type": "drop", "payload": {"column": 12}})).await.unwrap_err();
    assert_eq!(rejected(e), ("rejected".into(), "INVALID_PAYLOAD".into()));
    // A tool that does not exist is the MCP protocol's own error.
    let unknown = agent.client.call_tool(CallToolRequestParams::new("resign")).await;
    assert!(matches!(unknown, Err(ServiceError::McpError(_))), "{unknown:?}");
    // The turn is still the agent's, and a legal move applies.
    let receipt = agent.ok("play", json!({"type": "drop", "payload": {"column": 4}})).await;
    assert_eq!(receipt["revision"], 2);
    // `wait_for_turn` gives up at its timeout when the turn does not come.
    let started = Instant::now();
    let waited = agent.ok("wait_for_turn", json!({"timeoutMs": 300})).await;
    assert_eq!(waited["ready"], false, "{waited}");
    assert!(started.elapsed() >= Duration::from_millis(300) && started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_agent_seat_gets_its_declared_commands_per_minute() {
    let server = Server::start(&[]);
    let m = create(&server, "conecta4", json!({"p0": {"agent": "default"}, "p1": "bob"}), json!({})).await;
    let agent = Agent::connect(&server, grant(&server, &m, "p0").await["token"].as_str().unwrap()).await;
    // Conecta 4 declares 30 commands a minute: 30 refused moves are judged (and receipted),
    // the 31st is refused before it is judged.
    for n in 0..30 {
        let e = agent.call("play", json!({"type": "drop", "payload": {"column": 20}})).await.unwrap_err();
        assert_eq!(e["code"], "INVALID_PAYLOAD", "command {n}: {e}");
    }
    let e = agent.call("play", json!({"type": "drop", "payload": {"column": 3}})).await.unwrap_err();
    assert_eq!((e["code"].as_str(), e["recovery"].as_str()), (Some("RATE_LIMITED"), Some("retry-same-command")), "{e}");
    // It consumed nothing: the match is where it was.
    assert_eq!(agent.ok("get_view", json!({})).await["revision"], 0);
    // The limit is the seat's, whatever carries its commands: a WebSocket gets it too.
    let token = grant(&server, &m, "p0").await["token"].as_str().unwrap().to_owned();
    let mut ws = Client::connect_to(&server.addr.to_string(), &token).await;
    ws.send(&crate::client::command(&m, &uuid(), 0, 3)).await;
    assert_eq!(ws.recv().await["code"], "RATE_LIMITED");
    let (_, _, metrics) = http_raw(&server.addr.to_string(), "GET", "/metrics", b"").await;
    assert!(
        metrics.lines().any(|l| l == "juegoland_agent_limits_total{limit=\"commands_per_minute\"} 2"),
        "{}",
        metrics.lines().filter(|l| l.contains("agent_limits")).collect::<Vec<_>>().join("\n")
    );
}

/// Through the cluster: the platform creates the match on a router, which mints no grant (and
/// says so: the platform's identity service mints it), and the agent plays a whole Conecta 4
/// match against the bot through a gateway's MCP server — the gateway reaching the match over
/// the routers and following it on the Redis stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_agent_plays_through_a_gateway() {
    use crate::harness::Cluster;

    let secret = "agents-test-secret-0123456789abcdef0123456789";
    let (cluster, gateway) = Cluster::start_with_gateway("agents", 2, secret, &Cluster::shared_redis()).await;
    let router = cluster.routers[0].http.trim_start_matches("http://").to_owned();
    let seats = json!({"game": "conecta4", "seats": {"p0": {"bot": "default"}, "p1": {"agent": "default"}}});
    let (status, created) = crate::client::http(&router, "POST", "/v1/matches", Some(seats)).await;
    assert_eq!(status, 201, "{created}");
    let m = created["matchId"].as_str().unwrap().to_owned();
    let (status, body) =
        crate::client::http(&router, "POST", &format!("/v1/matches/{m}/agents"), Some(json!({"seat": "p1"}))).await;
    assert_eq!((status, body["code"].as_str()), (501, Some("TOKENS_NOT_MINTED_HERE")), "{body}");
    // The catalog the platform reads on a router shows the declaration.
    let (_, games) = crate::client::http(&router, "GET", "/v1/games", None).await;
    let c4 = games.as_array().unwrap().iter().find(|g| g["id"] == "conecta4").unwrap();
    assert_eq!(c4["agents"]["profiles"][0]["id"], "default", "{c4}");

    let tokens = juegoland_edge::Tokens::new(secret.as_bytes(), 600).unwrap();
    let token = tokens.issue_agent(m.parse().unwrap(), "p1").unwrap();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let agent = Agent::connect_to(&addr, &token).await;
    let (last, views) = agent.play_to_the_end(|_, actions| as_play(&actions[actions.len() / 2])).await;
    assert_eq!(last["result"]["kind"], "completed", "{last}");
    assert!(views.iter().all(|v| v["seat"] == "p1"));
    cluster.stop().await;
}
