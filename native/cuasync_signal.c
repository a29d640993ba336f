/* cuasync_signal.c — see cuasync_signal.h. The handler only increments a sig_atomic_t: nothing
 * in it is unsafe in a signal context, and Lua reads the count when it polls. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <string.h>

#include "cuasync_signal.h"

static volatile sig_atomic_t interrupts;
static int depth;
static struct sigaction saved;

static void on_interrupt(int sig)
{
    (void)sig;
    if (interrupts < 1000) interrupts = interrupts + 1;
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
}
