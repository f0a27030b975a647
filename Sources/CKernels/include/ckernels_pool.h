#ifndef CKERNELS_POOL_H
#define CKERNELS_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A persistent pool of worker threads that runs the pieces of one job at a time together with the
/// calling thread. Pieces are claimed one by one from a shared counter by whichever thread is
/// running, so the caller never waits for a worker that has not started: a job finishes when its
/// pieces are done, whether the workers took part or not (a worker the scheduler has not run, on
/// a busy machine, simply finds nothing left). The caller waits only for pieces a worker has
/// claimed and is running. Workers spin for 0.2 ms after a job, then sleep until the
/// next one; they run with denormals flushed to zero (ck_denormals_flush).
typedef struct ck_pool ck_pool;

/// A piece of work: `index` in [0, count).
typedef void (*ck_pool_task)(void *context, size_t index);

/// A pool of `threads` threads in all: the caller plus threads - 1 workers. NULL if `threads` < 2
/// or no worker could be started (run pieces on the calling thread then).
ck_pool *ck_pool_create(size_t threads);

/// Stops and joins the workers and frees the pool (NULL is ignored). No job may be running.
void ck_pool_destroy(ck_pool *pool);

/// Runs task(context, 0) ... task(context, count - 1) on the caller and the workers; returns when
/// all are done. One caller at a time per pool. With a NULL pool, runs them on the caller.
void ck_pool_run(ck_pool *pool, ck_pool_task task, void *context, size_t count);

/// A piece of one stage of a staged job: piece `index` in [0, counts[stage]).
typedef void (*ck_pool_stage_task)(void *context, size_t stage, size_t index);

/// Stages per job; ck_pool_run_stages runs longer sequences as several jobs.
#define CK_POOL_MAX_STAGES 64

/// Runs `stages` stages one after the other, stage s as the pieces task(context, s, 0) ...
/// task(context, s, counts[s] - 1), like ck_pool_run's; every piece of a stage has finished before
/// any piece of the next starts (its writes are visible to them, on whichever thread). One job for
/// up to CK_POOL_MAX_STAGES stages: the workers go from stage to stage without going back to the
/// caller, and a stage's end costs one wait on a shared counter instead of a job's publication
/// and the caller's return to its operator loop. Each count at most 0xFFFF; a count of 0 is an
/// empty stage. With a NULL pool, runs them on the caller.
void ck_pool_run_stages(ck_pool *pool, ck_pool_stage_task task, void *context, const size_t *counts, size_t stages);

/// Publishes a job of `count` pieces (at most 0xFFFF) like ck_pool_run's and returns at once: the
/// workers run its pieces while the caller does something else; the caller must call
/// ck_pool_finish before anything else on this pool. The caller's share is left to the workers
/// until then. Returns 0 (nothing published) without a pool or with a count out of range.
int ck_pool_start(ck_pool *pool, ck_pool_task task, void *context, size_t count);

/// Runs the pieces of the job ck_pool_start published that no worker has claimed, on the caller,
/// and waits until all are done.
void ck_pool_finish(ck_pool *pool);

#ifdef __cplusplus
}
#endif

#endif
