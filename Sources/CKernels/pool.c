// The work pool (see ckernels_pool.h).
#include "ckernels_pool.h"
#include "ckernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CK_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CK_RELAX() __asm__ __volatile__("yield")
#else
#define CK_RELAX() ((void)0)
#endif

/// How long a worker spins for the next job before it sleeps.
#define CK_POOL_SPIN_NS 200000u
/// A wait for workers' pieces this long (and longer than the caller's own share took) means a worker
/// was descheduled while it held a piece (the machine is busy): the caller then runs the next
/// CK_POOL_SOLO_JOBS jobs alone.
#define CK_POOL_STALL_NS 500000u
#define CK_POOL_SOLO_JOBS 64u

/// A thread's share of the current job: epoch (high 32 bits; 0 = none yet), next piece (16 bits),
/// end (low 16 bits). Pieces are claimed by compare-and-swap of the whole word, from the front by
/// the owner and from the back by the others once their own shares are done, so a thread that read
/// an older job's epoch can never claim a piece of a newer job.
typedef struct {
    _Alignas(64) _Atomic uint64_t word;
} ck_pool_share;

struct ck_pool {
    /// The epoch of the latest job, which workers watch.
    _Alignas(64) _Atomic uint32_t job;
    /// Its stage count (1 for ck_pool_run's jobs).
    _Atomic uint32_t stages;
    /// The job (written before its epoch is published; read after it is seen): task for
    /// ck_pool_run's jobs, stage_task (non-NULL) for staged ones.
    _Atomic(ck_pool_task) task;
    _Atomic(ck_pool_stage_task) stage_task;
    _Atomic(void *) context;
    _Atomic size_t base;
    /// Pieces of the current job finished, all stages together.
    _Alignas(64) _Atomic uint32_t done;
    /// Per stage: pieces of it and of the stages before (done reaches ends[s] when stage s is over).
    _Alignas(64) _Atomic uint32_t ends[CK_POOL_MAX_STAGES];
    /// Workers asleep (or about to be) on `wake`.
    _Alignas(64) _Atomic uint32_t sleepers;
    _Atomic int stop;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    /// The caller's last epoch, and how many more jobs it runs alone.
    uint32_t epoch, solo;
    size_t threads, workers;
    ck_pool_share *shares;  // [CK_POOL_MAX_STAGES][threads]: stage s's, thread 0 the caller
    pthread_t *handles;     // [threads - 1]
};

#define CK_SHARE(epoch, next, end) (((uint64_t)(epoch) << 32) | ((uint64_t)(next) << 16) | (uint64_t)(end))

static uint64_t pool_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/// Runs pieces of stage `stage` of job `epoch` as thread `self`: its own share from the front,
/// then the others' from the back, until none is left.
static void pool_run_pieces(ck_pool *p, size_t self, uint32_t epoch, uint32_t stage) {
    const ck_pool_task task = atomic_load_explicit(&p->task, memory_order_relaxed);
    const ck_pool_stage_task stage_task = atomic_load_explicit(&p->stage_task, memory_order_relaxed);
    void *const context = atomic_load_explicit(&p->context, memory_order_relaxed);
    const size_t base = atomic_load_explicit(&p->base, memory_order_relaxed);
    // task/context/base may already be a newer job's: then the epochs in the shares no longer
    // match and every claim below fails before anything runs.
    ck_pool_share *const shares = p->shares + (size_t)stage * p->threads;
    for (size_t k = 0; k < p->threads; k++) {
        const size_t t = (self + k) % p->threads;
        _Atomic uint64_t *share = &shares[t].word;
        uint64_t word = atomic_load(share);
        for (;;) {
            const uint32_t next = (uint32_t)(word >> 16) & 0xFFFFu, end = (uint32_t)word & 0xFFFFu;
            if ((uint32_t)(word >> 32) != epoch || next >= end) break;
            const uint64_t claimed = k == 0 ? CK_SHARE(epoch, next + 1, end) : CK_SHARE(epoch, next, end - 1);
            if (atomic_compare_exchange_weak(share, &word, claimed)) {
                const size_t index = k == 0 ? next : end - 1;
                if (stage_task) stage_task(context, base + stage, index);
                else task(context, base + index);
                atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
                word = atomic_load(share);
            }
        }
    }
}

/// A worker's wait for the end of stage `stage` of job `epoch`: 1 once every piece of it has
/// finished, 0 if a newer job has been published (this one is over: the caller took the rest).
static int pool_worker_wait_stage(ck_pool *p, uint32_t epoch, uint32_t stage) {
    unsigned spins = 0;
    for (;;) {
        if (atomic_load_explicit(&p->job, memory_order_relaxed) != epoch) return 0;
        const uint32_t end = atomic_load_explicit(&p->ends[stage], memory_order_relaxed);
        if (atomic_load_explicit(&p->done, memory_order_acquire) >= end) {
            // (Checked again: a newer job's counter and ends may have been read.)
            return atomic_load(&p->job) == epoch;
        }
        CK_RELAX();
        if (++spins > 4096 && spins % 1024 == 0) sched_yield();  // the caller may have lost its core
    }
}

typedef struct {
    ck_pool *pool;
    size_t index;
} ck_pool_worker_arg;

static void *pool_worker(void *argument) {
    ck_pool *p = ((ck_pool_worker_arg *)argument)->pool;
    const size_t self = ((ck_pool_worker_arg *)argument)->index;
    free(argument);
    (void)ck_denormals_flush();
    uint32_t seen = 0;
    for (;;) {
        uint32_t job = atomic_load(&p->job);
        uint64_t since = 0;
        unsigned spins = 0;
        while (job == seen && !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
            CK_RELAX();
            if (++spins % 64 == 0) {
                const uint64_t now = pool_now_ns();
                if (since == 0) {
                    since = now;
                } else if (now - since > CK_POOL_SPIN_NS) {
                    pthread_mutex_lock(&p->mutex);
                    atomic_fetch_add(&p->sleepers, 1);
                    while (atomic_load(&p->job) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->mutex);
                    atomic_fetch_sub(&p->sleepers, 1);
                    pthread_mutex_unlock(&p->mutex);
                    since = 0;
                }
            }
            job = atomic_load(&p->job);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = job;
        const uint32_t stages = atomic_load_explicit(&p->stages, memory_order_relaxed);
        for (uint32_t stage = 0; stage < stages && stage < CK_POOL_MAX_STAGES; stage++) {
            pool_run_pieces(p, self, job, stage);
            if (stage + 1 < stages && !pool_worker_wait_stage(p, job, stage)) break;
        }
    }
}

ck_pool *ck_pool_create(size_t threads) {
    if (threads < 2 || threads > 1024) return NULL;
    ck_pool *p = calloc(1, sizeof(ck_pool));
    if (!p) return NULL;
    p->threads = threads;
    p->shares = aligned_alloc(64, CK_POOL_MAX_STAGES * threads * sizeof(ck_pool_share));
    p->handles = calloc(threads - 1, sizeof(pthread_t));
    if (!p->shares || !p->handles || pthread_mutex_init(&p->mutex, NULL) != 0) {
        free(p->shares);
        free(p->handles);
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->mutex);
        free(p->shares);
        free(p->handles);
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < CK_POOL_MAX_STAGES * threads; i++) atomic_init(&p->shares[i].word, 0);
    for (size_t i = 1; i < threads; i++) {
        ck_pool_worker_arg *argument = malloc(sizeof(ck_pool_worker_arg));
        if (!argument) break;
        argument->pool = p;
        argument->index = i;
        if (pthread_create(&p->handles[p->workers], NULL, pool_worker, argument) != 0) {
            free(argument);
            break;
        }
        p->workers++;
    }
    if (p->workers == 0) {
        ck_pool_destroy(p);
        return NULL;
    }
    return p;
}

void ck_pool_destroy(ck_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mutex);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);
    for (size_t i = 0; i < p->workers; i++) pthread_join(p->handles[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->shares);
    free(p->handles);
    free(p);
}

/// The caller's wait for the pieces of the current job the workers claimed, until `done` reaches
/// `target` (yielding if that takes a while, in case the worker shares this core). A wait longer
/// than CK_POOL_STALL_NS and than the caller's own work since `start` (a worker's last piece
/// legitimately takes up to one piece's time) means the worker lost its core while it held a
/// piece: the next jobs run on the caller alone, which is faster on a busy machine than waiting for
/// the scheduler at every job.
static void pool_wait_done(ck_pool *p, uint32_t target, uint64_t start) {
    unsigned spins = 0;
    uint64_t since = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < target) {
        CK_RELAX();
        if (++spins % 1024 == 0) {
            const uint64_t now = pool_now_ns();
            if (since == 0) since = now;
            else if (now - since > CK_POOL_STALL_NS && now - since > since - start) p->solo = CK_POOL_SOLO_JOBS;
            if (spins > 4096) sched_yield();
        }
    }
}

/// One job: `stages` stages (at most CK_POOL_MAX_STAGES) of counts[s] <= 0xFFFF pieces, run as
/// stage_task(context, base + s, i); or, with stage_task NULL, one stage of counts[0] pieces run as
/// task(context, base + i).
static void pool_publish(ck_pool *p, ck_pool_task task, ck_pool_stage_task stage_task, void *context, size_t base,
                         const size_t *counts, uint32_t stages) {
    atomic_store_explicit(&p->task, task, memory_order_relaxed);
    atomic_store_explicit(&p->stage_task, stage_task, memory_order_relaxed);
    atomic_store_explicit(&p->context, context, memory_order_relaxed);
    atomic_store_explicit(&p->base, base, memory_order_relaxed);
    atomic_store_explicit(&p->stages, stages, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    if (++p->epoch == 0) p->epoch = 1;  // 0 means "no job yet"
    // Thread t's share of stage s: pieces [t * count / threads, (t + 1) * count / threads) (the
    // threads that are not running the job leave theirs to the others).
    const size_t threads = p->workers + 1;
    uint32_t total = 0;
    for (uint32_t s = 0; s < stages; s++) {
        const uint32_t count = (uint32_t)counts[s];
        total += count;
        atomic_store_explicit(&p->ends[s], total, memory_order_relaxed);
        for (size_t t = 0; t < p->threads; t++) {
            const uint32_t begin = t < threads ? (uint32_t)(t * count / threads) : count;
            const uint32_t end = t < threads ? (uint32_t)((t + 1) * count / threads) : count;
            atomic_store_explicit(&p->shares[s * p->threads + t].word, CK_SHARE(p->epoch, begin, end), memory_order_relaxed);
        }
    }
    atomic_store(&p->job, p->epoch);
    if (atomic_load(&p->sleepers) != 0) {
        pthread_mutex_lock(&p->mutex);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mutex);
    }
}

static void pool_run_job(ck_pool *p, ck_pool_task task, ck_pool_stage_task stage_task, void *context, size_t base,
                         const size_t *counts, uint32_t stages) {
    pool_publish(p, task, stage_task, context, base, counts, stages);
    // Only pieces a worker claimed are left after the caller's own and stolen ones: wait for them
    // at the end of every stage.
    for (uint32_t s = 0; s < stages; s++) {
        const uint64_t start = pool_now_ns();
        pool_run_pieces(p, 0, p->epoch, s);
        pool_wait_done(p, atomic_load_explicit(&p->ends[s], memory_order_relaxed), start);
    }
}

void ck_pool_run(ck_pool *p, ck_pool_task task, void *context, size_t count) {
    if (count == 0) return;
    if (!p || count == 1 || p->solo > 0) {
        if (p && count > 1 && p->solo > 0) p->solo--;
        for (size_t i = 0; i < count; i++) task(context, i);
        return;
    }
    for (size_t base = 0; base < count; base += 0xFFFFu) {
        const size_t left = count - base, n = left < 0xFFFFu ? left : 0xFFFFu;
        pool_run_job(p, task, NULL, context, base, &n, 1);
    }
}

void ck_pool_run_stages(ck_pool *p, ck_pool_stage_task task, void *context, const size_t *counts, size_t stages) {
    if (stages == 0 || !counts) return;
    int alone = !p || p->solo > 0;
    for (size_t s = 0; s < stages && !alone; s++) alone = counts[s] > 0xFFFFu;
    if (alone) {
        if (p && p->solo > 0) p->solo--;
        for (size_t s = 0; s < stages; s++)
            for (size_t i = 0; i < counts[s]; i++) task(context, s, i);
        return;
    }
    for (size_t first = 0; first < stages; first += CK_POOL_MAX_STAGES) {
        const size_t n = stages - first < CK_POOL_MAX_STAGES ? stages - first : CK_POOL_MAX_STAGES;
        // (The job's stage s is stage first + s: `base`.)
        pool_run_job(p, NULL, task, context, first, counts + first, (uint32_t)n);
    }
}

int ck_pool_start(ck_pool *p, ck_pool_task task, void *context, size_t count) {
    if (!p || count == 0 || count > 0xFFFFu) return 0;
    const size_t n = count;
    pool_publish(p, task, NULL, context, 0, &n, 1);
    return 1;
}

void ck_pool_finish(ck_pool *p) {
    if (!p) return;
    pool_run_pieces(p, 0, p->epoch, 0);
    // (No switch to running alone here: a started job's pieces last as long as the caller let them.)
    const uint32_t target = atomic_load_explicit(&p->ends[0], memory_order_relaxed);
    unsigned spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < target) {
        CK_RELAX();
        if (++spins > 4096 && spins % 1024 == 0) sched_yield();
    }
}
