/*
 * stdio-ping: round-trip latency of MCP "ping" over a server's stdio.
 *
 *   stdio-ping [-n count] [-w warmup] command [argument ...]
 *
 * Starts the command with its stdin and stdout on pipes (stderr is
 * inherited), sends initialize and notifications/initialized, then
 * "warmup" untimed pings (default 100) and "count" timed ones (default
 * 10000), strictly one at a time: each request line is written, then its
 * response line is read in full before the next is sent.  Each round trip
 * is timed with clock_gettime(CLOCK_MONOTONIC).  Prints the median, p95,
 * p99, mean, min and max in microseconds, then closes the server's stdin
 * and reaps it.  Exits 1 if the server answers anything unexpected.
 *
 * Build: cc -O2 -o stdio-ping stdio-ping.c
 */

#define _POSIX_C_SOURCE 200809L

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pid_t child = -1;
static int to_srv = -1, from_srv = -1;

/* Input buffer for response lines. */
static char *ibuf;
static size_t ilen, icap = 1 << 16;

static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("stdio-ping: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (child > 0)
		kill(child, SIGTERM);
	exit(1);
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: stdio-ping [-n count] [-w warmup] command [argument ...]\n");
	exit(2);
}

static void
send_line(const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(to_srv, s, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write to server: %s", strerror(errno));
		}
		s += n;
		len -= (size_t)n;
	}
}

/*
 * Reads one line from the server into *line (NUL-terminated, without the
 * newline).  The returned pointer stays valid until the next call.
 */
static char *
recv_line(void)
{
	static size_t consumed;
	char *nl;

	/* Drop the line handed out last time. */
	if (consumed > 0) {
		memmove(ibuf, ibuf + consumed, ilen - consumed);
		ilen -= consumed;
		consumed = 0;
	}
	for (;;) {
		nl = memchr(ibuf, '\n', ilen);
		if (nl != NULL) {
			*nl = '\0';
			consumed = (size_t)(nl - ibuf) + 1;
			return ibuf;
		}
		if (ilen == icap) {
			icap *= 2;
			if ((ibuf = realloc(ibuf, icap)) == NULL)
				die("out of memory");
		}
		ssize_t n = read(from_srv, ibuf + ilen, icap - ilen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read from server: %s", strerror(errno));
		}
		if (n == 0)
			die("server closed its stdout");
		ilen += (size_t)n;
	}
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double
pct_us(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (double)v[rank - 1] / 1000.0;
}

static void
spawn(char **argv)
{
	int in[2], out[2];

	if (pipe(in) == -1 || pipe(out) == -1)
		die("pipe: %s", strerror(errno));
	child = fork();
	if (child == -1)
		die("fork: %s", strerror(errno));
	if (child == 0) {
		if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1)
			_exit(127);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "stdio-ping: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_srv = in[1];
	from_srv = out[0];
}

int
main(int argc, char **argv)
{
	long count = 10000, warmup = 100;
	int ch;

	while ((ch = getopt(argc, argv, "+n:w:")) != -1) {
		char *end;

		switch (ch) {
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end != '\0' || count < 1)
				usage();
			break;
		case 'w':
			warmup = strtol(optarg, &end, 10);
			if (*end != '\0' || warmup < 0)
				usage();
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();

	signal(SIGPIPE, SIG_IGN);
	if ((ibuf = malloc(icap)) == NULL)
		die("out of memory");
	spawn(argv);

	static const char init[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"2025-06-18\","
	    "\"capabilities\":{},"
	    "\"clientInfo\":{\"name\":\"stdio-ping\",\"version\":\"1\"}}}\n";
	static const char initialized[] =
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

	send_line(init, sizeof(init) - 1);
	char *line = recv_line();
	if (strstr(line, "\"result\"") == NULL ||
	    strstr(line, "\"protocolVersion\"") == NULL)
		die("unexpected answer to initialize: %.300s", line);
	send_line(initialized, sizeof(initialized) - 1);

	uint64_t *rtt = calloc((size_t)count, sizeof(*rtt));
	if (rtt == NULL)
		die("out of memory");

	char req[128], want[64];
	for (long i = 0; i < warmup + count; i++) {
		long id = i + 1;
		int rl = snprintf(req, sizeof(req),
		    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"ping\"}\n", id);
		snprintf(want, sizeof(want), "\"id\":%ld", id);

		uint64_t t0 = now_ns();
		send_line(req, (size_t)rl);
		line = recv_line();
		uint64_t t1 = now_ns();

		/* The answer must be this ping's empty result. */
		char *p = strstr(line, want);
		if (p == NULL || (p[strlen(want)] != ',' &&
		    p[strlen(want)] != '}') ||
		    strstr(line, "\"result\":{}") == NULL)
			die("unexpected answer to ping %ld: %.300s", id, line);
		if (i >= warmup)
			rtt[i - warmup] = t1 - t0;
	}

	close(to_srv);
	int status;
	while (waitpid(child, &status, 0) == -1)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	child = -1;

	uint64_t sum = 0;
	for (long i = 0; i < count; i++)
		sum += rtt[i];
	qsort(rtt, (size_t)count, sizeof(*rtt), cmp_u64);
	size_t n = (size_t)count;
	double median = n % 2 ? rtt[n / 2] / 1000.0 :
	    (rtt[n / 2 - 1] + rtt[n / 2]) / 2000.0;

	printf("pings: %ld sequential round trips (after %ld untimed)\n",
	    count, warmup);
	printf("median_us: %.1f\n", median);
	printf("p95_us: %.1f\n", pct_us(rtt, n, 95));
	printf("p99_us: %.1f\n", pct_us(rtt, n, 99));
	printf("mean_us: %.1f\n", (double)sum / (double)n / 1000.0);
	printf("min_us: %.1f\n", rtt[0] / 1000.0);
	printf("max_us: %.1f\n", rtt[n - 1] / 1000.0);
	if (WIFEXITED(status))
		printf("server_exit: %d\n", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		printf("server_exit: signal %d\n", WTERMSIG(status));
	free(rtt);
	free(ibuf);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
