/*
 * A command in C with wasi-libc that sleeps for 20 ms with nanosleep, which
 * wasi-libc does with poll_oneoff, and answers whether it slept.
 */
#include <stdio.h>
#include <time.h>

int main(void) {
	struct timespec begun, now, nap = {0, 20 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &begun);
	int rc = nanosleep(&nap, NULL);
	clock_gettime(CLOCK_MONOTONIC, &now);
	long slept = (now.tv_sec - begun.tv_sec) * 1000000000L + (now.tv_nsec - begun.tv_nsec);
	printf("{\"summary\": \"rested\", \"data\": {\"slept\": %s}}\n", rc == 0 && slept >= 20000000L ? "true" : "false");
	return 0;
}
