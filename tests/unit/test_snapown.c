// SPDX-License-Identifier: MIT
/*
 * A snapshot read between two ticks (issue 49): what it points to stays as the tick saw it while
 * the tables it was made from grow, move and free (model__snapshot's own connections,
 * snapshot_own's copies). Under ASan a pointer left into the tables is a use after free; in the
 * plain build the tables are scribbled over before they are freed, so the values differ.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/snapshot.h"

static char *heap_str(const char *s)
{
	char *p = strdup(s);

	assert_non_null(p);
	return p;
}

/* frees a string after writing over it, as a table that moves leaves its old place */
static void scribble_free(char *s)
{
	memset(s, 'X', strlen(s));
	free(s);
}

static void test_own_survives_the_tables(void **state)
{
	struct snap_proc procs[2] = {{.pid = 10}, {.pid = 11}};
	struct snap_conn conns[1] = {{.id = 1, .pid = 10}};
	struct snapshot s = {.procs = procs, .nprocs = 2, .conns = conns, .nconns = 1};
	struct snap_setting *set = calloc(2, sizeof(*set));
	struct snap_ib_error *ib_err = calloc(1, sizeof(*ib_err));
	struct snap_ib *ib = calloc(1, sizeof(*ib));
	char *name0 = heap_str("NCCL_SOCKET_IFNAME"), *value0 = heap_str("eth0"),
	     *name1 = heap_str("NCCL_DEBUG"), *warn = heap_str("socket.cc:506 connect failed"),
	     *addr = heap_str("10.0.0.2<43517>"), *label = heap_str("bootstrap (bootstrap)");
	struct snap_owned o = {0};

	(void)state;
	assert_non_null(set);
	assert_non_null(ib_err);
	assert_non_null(ib);
	set[0] = (struct snap_setting){.name = name0, .value = value0, .read = true};
	set[1] = (struct snap_setting){.name = name1}; /* unset: NCCL's default */
	procs[0].set = set, procs[0].nset = 2;
	procs[0].nccl_warning = warn;
	procs[0].nccl_retry_addr = addr;
	ib_err->count = 3;
	snprintf(ib_err->hca, sizeof(ib_err->hca), "mlx5_0");
	procs[0].ib_err = ib_err;
	ib->nqp = 2;
	procs[1].ib = ib;
	conns[0].nccl_label = label;

	assert_int_equal(snapshot_own(&s, &o), 0);
	assert_non_null(o.block);
	/* every table it came from moves on (a record between two ticks) */
	scribble_free(name0), scribble_free(value0), scribble_free(name1);
	scribble_free(warn), scribble_free(addr), scribble_free(label);
	memset(set, 0xff, 2 * sizeof(*set));
	free(set);
	memset(ib_err, 0xff, sizeof(*ib_err));
	free(ib_err);
	memset(ib, 0xff, sizeof(*ib));
	free(ib);

	assert_int_equal(procs[0].nset, 2);
	assert_string_equal(procs[0].set[0].name, "NCCL_SOCKET_IFNAME");
	assert_string_equal(procs[0].set[0].value, "eth0");
	assert_true(procs[0].set[0].read);
	assert_string_equal(procs[0].set[1].name, "NCCL_DEBUG");
	assert_null(procs[0].set[1].value);
	assert_string_equal(procs[0].nccl_warning, "socket.cc:506 connect failed");
	assert_string_equal(procs[0].nccl_retry_addr, "10.0.0.2<43517>");
	assert_null(procs[0].nccl_first_warning);
	assert_int_equal(procs[0].ib_err->count, 3);
	assert_string_equal(procs[0].ib_err->hca, "mlx5_0");
	assert_null(procs[0].ib);
	assert_int_equal(procs[1].ib->nqp, 2);
	assert_null(procs[1].set);
	assert_string_equal(conns[0].nccl_label, "bootstrap (bootstrap)");

	/* the next tick's own: the copies of the one before are freed, its pointers still good */
	assert_int_equal(snapshot_own(&s, &o), 0);
	assert_string_equal(procs[0].set[0].value, "eth0");
	assert_string_equal(conns[0].nccl_label, "bootstrap (bootstrap)");
	snap_owned_free(&o);
	assert_null(o.block);
}

static struct nt_conn tcp(uint16_t sport)
{
	struct nt_conn c = {.tgid = 10, .state = 1};

	c.t.family = 2;
	c.t.sport = sport;
	c.t.dport = 5000;
	return c;
}

/* the model's connections change and grow under a snapshot taken before */
static void test_model_conns_are_the_snapshots(void **state)
{
	struct model *m = model__new();
	struct snapshot s = {0};
	struct nt_conn c = tcp(40000);

	(void)state;
	assert_non_null(m);
	model__proc_add(m, 10, 1, "rank", 1);
	model__conn_update(m, 500, &c, false);
	model__snapshot(m, 100, &s);
	assert_int_equal(s.nconns, 1);
	assert_int_equal(s.conns[0].id, 500);
	/* its bytes move on, records between two ticks; then the array grows */
	c.bytes_sent = 999;
	model__conn_update(m, 500, &c, false);
	assert_int_equal(s.conns[0].c.bytes_sent, 0);
	for (int i = 0; i < 200; i++) {
		struct nt_conn d = tcp((uint16_t)(41000 + i));

		model__conn_update(m, 100 + (uint64_t)i, &d, false);
	}
	assert_int_equal(s.nconns, 1);
	assert_int_equal(s.conns[0].id, 500);
	assert_int_equal(s.conns[0].c.t.sport, 40000);
	assert_int_equal(s.conns[0].c.bytes_sent, 0);
	model__snapshot(m, 200, &s);
	assert_int_equal(s.nconns, 201);
	assert_int_equal(s.conns[0].c.bytes_sent, 999);
	model__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_survives_the_tables),
		cmocka_unit_test(test_model_conns_are_the_snapshots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
