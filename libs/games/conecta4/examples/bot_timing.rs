//! Temporary: measures the bot.
use juegoland_conecta4::{Action, BOT_DEFAULT, Config, Conecta4};
use juegoland_sdk::{Game, Position, Randomness, Services, Setup, SplitMix64, Participant};
use std::time::Instant;

fn main() {
    for config in [Config::default(), Config { rows: 10, columns: 10, connect: 4 }, Config { rows: 10, columns: 10, connect: 3 }, Config { rows: 8, columns: 9, connect: 5 }] {
        let participants: std::collections::BTreeMap<_, _> = [("p0".to_owned(), Participant::active()), ("p1".to_owned(), Participant::active())].into();
        let mut e = SplitMix64(0);
        let t = Conecta4.setup(&Setup { config, participants: participants.clone() }, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
        let mut p = Position { config, participants, data: t.data, flow: t.flow, result: t.result };
        let mut worst = 0f64;
        let mut total = 0f64;
        let mut n = 0;
        let mut moves = vec![];
        while p.result.is_none() {
            let seat = p.flow.actors.keys().next().unwrap().clone();
            let start = Instant::now();
            let a = Conecta4.bot_action(&p, &seat, BOT_DEFAULT, &mut e).unwrap();
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            worst = worst.max(ms);
            total += ms;
            n += 1;
            let Action::Drop(d) = a;
            moves.push(d.column);
            let t = Conecta4.apply(&p, &seat, &a, &mut Services::new(0, Randomness::live(&mut e))).unwrap();
            p = Position { data: t.data, flow: t.flow, result: t.result, ..p };
        }
        println!("{config:?}: {n} moves, worst {worst:.2} ms, mean {:.2} ms, result {:?}\n  {moves:?}", total / n as f64, p.result);
    }
}
