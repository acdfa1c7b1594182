//! The writer thread: group commit.

use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use rusqlite::Connection;

use super::ops::apply;
use super::{Cmd, Completion, Job, Reply, StoreError, MAX_BATCH};

pub(crate) fn run(conn: Connection, rx: Receiver<Cmd>) {
    let mut batch: Vec<Job> = Vec::with_capacity(1024);
    loop {
        // Block for the first command, then take whatever else is already queued: everything that
        // arrived while the previous commit was in flight goes into this transaction.
        let mut close = None;
        match rx.recv() {
            Ok(Cmd::Job(job)) => batch.push(job),
            Ok(Cmd::Close(done)) => close = Some(done),
            Err(_) => break, // every sender is gone (store dropped): nothing more can arrive
        }
        while close.is_none() && batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Cmd::Job(job)) => batch.push(job),
                Ok(Cmd::Close(done)) => close = Some(done),
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
            }
        }
        if !batch.is_empty() {
            let results = apply_batch(&conn, &batch);
            complete(&mut batch, results);
        }
        if let Some(done) = close {
            // Fold the WAL back into the database so the data directory holds one file at rest.
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let result = conn.close().map_err(|(_, e)| StoreError::from(e));
            let _ = done.send(result);
            return;
        }
    }
}

fn complete(batch: &mut Vec<Job>, results: Vec<Result<Reply, StoreError>>) {
    let mut sinks: Vec<Arc<dyn Completion>> = Vec::new();
    for (job, result) in batch.drain(..).zip(results) {
        job.sink.complete(job.ticket, result);
        if !sinks.iter().any(|s| Arc::ptr_eq(s, &job.sink)) {
            sinks.push(job.sink);
        }
    }
    for sink in sinks {
        sink.flush();
    }
}

fn exec(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

fn rollback(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = exec(conn, "ROLLBACK");
    }
}

/// Applies a batch in one transaction. Fast path: no savepoints. If any operation fails, the
/// transaction is rolled back and the batch is replayed with one savepoint per operation, so only
/// the failing operations fail and every other one commits (each operation stays atomic).
fn apply_batch(conn: &Connection, batch: &[Job]) -> Vec<Result<Reply, StoreError>> {
    if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
        return batch.iter().map(|_| Err(e.clone())).collect();
    }
    let mut results = Vec::with_capacity(batch.len());
    let mut failed = false;
    for job in batch {
        match apply(conn, &job.op) {
            Ok(r) => results.push(Ok(r)),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    if failed {
        rollback(conn);
        return apply_batch_isolated(conn, batch);
    }
    match exec(conn, "COMMIT") {
        Ok(()) => results,
        Err(e) => {
            rollback(conn);
            batch.iter().map(|_| Err(e.clone())).collect()
        }
    }
}

fn apply_batch_isolated(conn: &Connection, batch: &[Job]) -> Vec<Result<Reply, StoreError>> {
    if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
        return batch.iter().map(|_| Err(e.clone())).collect();
    }
    let mut results = Vec::with_capacity(batch.len());
    for job in batch {
        let result = exec(conn, "SAVEPOINT op").and_then(|_| match apply(conn, &job.op) {
            Ok(r) => exec(conn, "RELEASE op").map(|_| r),
            Err(e) => {
                let _ = exec(conn, "ROLLBACK TO op");
                let _ = exec(conn, "RELEASE op");
                Err(e)
            }
        });
        if conn.is_autocommit() {
            // A severe error (disk full, I/O) rolled the whole transaction back: nothing of this
            // batch is kept, so everything fails.
            let e = result.err().unwrap_or_else(|| StoreError::new(super::StoreErrorCode::Io, "the transaction was rolled back"));
            return batch.iter().map(|_| Err(e.clone())).collect();
        }
        results.push(result);
    }
    match exec(conn, "COMMIT") {
        Ok(()) => results,
        Err(e) => {
            rollback(conn);
            batch.iter().map(|_| Err(e.clone())).collect()
        }
    }
}
