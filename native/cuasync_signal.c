/* cuasync_signal.c — see cuasync_signal.h. The handler increments a sig_atomic_t; only at a hard
 * stop does it do more, and then only what is safe in a signal context (open, write, close,
 * _exit) over memory the caller's thread published whole before (one atomic pointer). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuasync_signal.h"

/* -- State --------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupts;
static int depth;
static struct sigaction saved;

/* The label of the code running that cannot be polled: two buffers, the one in use named by an
 * index (-1: none), so that a handler never reads a label half copied. */
static char labels[2][256];
static volatile sig_atomic_t label_at = -1;

/* What a hard stop writes: one block (entries, then their paths and data), published through an
 * atomic pointer; `stopping` tells the caller's thread not to free a block a handler may read. */
typedef struct kept_block {
    int n;
    cuasync_stop_file files[1];
} kept_block;
static kept_block *kept;
static int stopping;

static const char NOT_INSIDE[] = "a step that did not stop at the second Ctrl-C";

/* -- The hard stop ------------------------------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;   /* nothing to be done about it here: the other files still go */
        p += w;
        n -= (size_t)w;
    }
}

static void write_entry(const cuasync_stop_file *f, const char *label)
{
    int fd = f->path ? open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0666) : f->fd;
    size_t i, from = 0;
    if (fd < 0) return;
    for (i = 0; i < f->len; i++) {
        if (f->data[i] != 1) continue;
        write_all(fd, f->data + from, i - from);
        write_all(fd, label, strlen(label));
        from = i + 1;
    }
    write_all(fd, f->data + from, f->len - from);
    if (f->path) close(fd);
}

static void hard_stop(void)
{
    int at = label_at, i;
    kept_block *k;
    if (__atomic_exchange_n(&stopping, 1, __ATOMIC_SEQ_CST)) return;   /* another thread writes */
    k = __atomic_load_n(&kept, __ATOMIC_SEQ_CST);
    for (i = 0; k && i < k->n; i++) write_entry(&k->files[i], at >= 0 ? labels[at] : NOT_INSIDE);
    _exit(130);
}

static void on_interrupt(int sig)
{
    (void)sig;
    if (interrupts < 1000) interrupts = interrupts + 1;
    if ((interrupts >= 2 && label_at >= 0) || interrupts >= 3) hard_stop();
}

/* -- Begin, count, end --------------------------------------------------------------------- */

static void forget(void)
{
    kept_block *old = __atomic_exchange_n(&kept, (kept_block *)NULL, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&stopping, __ATOMIC_SEQ_CST)) free(old);
}

int cuasync_interrupt_begin(void)
{
    struct sigaction sa;
    if (depth++ > 0) return 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;   /* a blocking driver call goes on; the poll that follows sees the count */
    interrupts = 0;
    label_at = -1;
    if (sigaction(SIGINT, &sa, &saved) != 0) {
        depth = 0;
        return -1;
    }
    return 0;
}

int cuasync_interrupt_count(void)
{
    return (int)interrupts;
}

void cuasync_interrupt_end(void)
{
    if (depth == 0) return;
    if (--depth > 0) return;
    sigaction(SIGINT, &saved, NULL);
    interrupts = 0;
    label_at = -1;
    forget();
}

/* -- What cannot be polled, and what a hard stop writes ------------------------------------ */

void cuasync_interrupt_inside(const char *label)
{
    int next;
    if (!label) {
        label_at = -1;
        return;
    }
    next = label_at == 0 ? 1 : 0;
    strncpy(labels[next], label, sizeof labels[next] - 1);
    labels[next][sizeof labels[next] - 1] = '\0';
    label_at = next;
    /* a second interrupt that came while nothing was marked is acted on by the caller's poll;
     * one that comes now, inside, stops here */
}

int cuasync_interrupt_keep(const cuasync_stop_file *files, int n)
{
    size_t bytes = sizeof(kept_block) + (n > 1 ? (size_t)(n - 1) : 0) * sizeof(cuasync_stop_file);
    kept_block *k, *old;
    char *p;
    int i;
    if (n < 0 || (n > 0 && !files)) return CUASYNC_E_INVALID;
    for (i = 0; i < n; i++) {
        if (!files[i].data && files[i].len > 0) return CUASYNC_E_INVALID;
        bytes += files[i].len + (files[i].path ? strlen(files[i].path) + 1 : 0);
    }
    k = malloc(bytes);
    if (!k) return CUASYNC_E_NOMEM;
    k->n = n;
    p = (char *)&k->files[n > 1 ? n : 1];
    for (i = 0; i < n; i++) {
        cuasync_stop_file *f = &k->files[i];
        f->fd = files[i].fd;
        f->len = files[i].len;
        f->path = NULL;
        if (files[i].path) {
            size_t pl = strlen(files[i].path) + 1;
            memcpy(p, files[i].path, pl);
            f->path = p;
            p += pl;
        }
        if (files[i].len > 0) memcpy(p, files[i].data, files[i].len);
        f->data = p;
        p += files[i].len;
    }
    old = __atomic_exchange_n(&kept, k, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&stopping, __ATOMIC_SEQ_CST)) free(old);
    return CUASYNC_OK;
}
