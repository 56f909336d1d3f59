/*
 * A capability in C with wasi-libc, built as a command (each run a fresh
 * instance) or as a reactor (clang -mexec-model=reactor: it exports
 * pluginhost_run, and each run starts from the state after _initialize).
 * It counts its runs and the notes of the request's plugin_storage
 * snapshot, and remembers the last Instance it ran for: a run that starts
 * from a clean state always answers runs 1 and no earlier Instance.
 */
#include <stdio.h>
#include <string.h>

static int runs;
static char last_instance[128];
static char request[1 << 20];

/* count returns how many times needle occurs in request. */
static int count(const char *needle) {
	int n = 0;
	for (const char *p = request; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* instance copies the request's "instance":{"id":"..."} into out. */
static void instance(char *out, size_t size) {
	const char *p = strstr(request, "\"instance\":{\"id\":\"");
	out[0] = 0;
	if (p == NULL)
		return;
	p += strlen("\"instance\":{\"id\":\"");
	size_t i = 0;
	while (p[i] && p[i] != '"' && i + 1 < size) {
		out[i] = p[i];
		i++;
	}
	out[i] = 0;
}

static int serve(void) {
	size_t n = fread(request, 1, sizeof request - 1, stdin);
	request[n] = 0;
	runs++;
	char earlier[128];
	strcpy(earlier, last_instance);
	instance(last_instance, sizeof last_instance);
	printf("{\"summary\":\"run %d, %d notes\",\"data\":{\"runs\":%d,\"notes\":%d,\"earlier_instance\":\"%s\",\"request_bytes\":%zu}}",
	       runs, count("\"key\":"), runs, count("\"key\":"), earlier, n);
	fflush(stdout);
	return 0;
}

#ifdef REACTOR
__attribute__((export_name("pluginhost_run"))) void run(void) { serve(); }
#else
int main(void) { return serve(); }
#endif
