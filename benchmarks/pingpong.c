// A cache line's round trip between two threads, in ns (benchmarks/explore_results.md, session 21):
// whether the explorer's slow two-thread phases are the host placing the two vCPUs on cores
// that share no cache.   gcc -O2 -pthread -o pingpong benchmarks/pingpong.c && ./pingpong
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#define N 200000
static _Atomic long ball __attribute__((aligned(128)));
static void *other(void *arg) {
    (void)arg;
    for (long i = 0; i < N; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1) {}
        atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
    }
    return 0;
}
int main(void) {
    pthread_t t;
    struct timespec a, b;
    pthread_create(&t, 0, other, 0);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < N; i++) {
        atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2) {}
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    pthread_join(t, 0);
    printf("%.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / N);
    return 0;
}
