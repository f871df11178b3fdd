// SPDX-License-Identifier: MIT
/*
 * The NCCL state the probe events build (nccl/ncclevents.c), fed with the events BPF sends:
 * NCCL's WARNs, a failure's first kept along with its last.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include "nccl/ncclstate.h"
#include "testutil.h"

#define SEC NT_NSEC_PER_SEC

/* One WARN of pid 100 at ts, as ncclDebugLog's probe sends it (thread tid) */
static void warn(struct nccl_state *s, int tid, uint64_t ts, const char *text)
{
	struct nt_ev_nccl e;

	memset(&e, 0, sizeof(e));
	e.h.ts_ns = ts;
	e.pid = 100;
	e.tid = tid;
	e.probe = NT_P_DEBUG_LOG;
	e.ret = 1;
	snprintf(e.d.text, sizeof(e.d.text), "%s", text);
	json_decref(nccl_state__event(s, &e));
}

static void test_warn_bursts(void **state)
{
	struct nccl_state *s = nccl_state__new(NULL, NULL);
	struct snap_proc sp = {.pid = 100};

	(void)state;
	assert_non_null(s);
	/* a lone WARN: it is the first and the last */
	warn(s, 11, 10 * SEC, "NET/IB : Got non-fatal async event: GID table changed");
	nccl_state__proc_snap(s, &sp);
	assert_string_equal(sp.nccl_warning,
			    "NET/IB : Got non-fatal async event: GID table changed");
	assert_null(sp.nccl_first_warning);
	assert_int_equal(sp.nccl_burst_warnings, 1);
	/*
	 * much later, a failure: the proxy thread's connect WARNs where it starts, the main
	 * thread as it goes up (NCCL 2.21's proxy.cc and socket.cc)
	 */
	warn(s, 12, 20 * SEC,
	     "socketStartConnect: Connect to 127.0.0.1<4242> failed : Software caused connection "
	     "abort");
	warn(s, 12, 20 * SEC + 1000000,
	     "[Service thread] Error encountered progressing operation=Connect, res=2, closing "
	     "connection");
	warn(s, 11, 20 * SEC + 900000000, "Socket recv failed while polling for opId=0x1");
	nccl_state__proc_snap(s, &sp);
	assert_string_equal(sp.nccl_warning, "Socket recv failed while polling for opId=0x1");
	assert_non_null(sp.nccl_first_warning);
	assert_string_equal(sp.nccl_first_warning,
			    "socketStartConnect: Connect to 127.0.0.1<4242> failed : Software "
			    "caused connection abort");
	assert_int_equal(sp.nccl_burst_warnings, 3);
	/* more than a second after the last: another failure, its own first */
	warn(s, 11, 22 * SEC, "Comm 0x1 is in abort state");
	nccl_state__proc_snap(s, &sp);
	assert_null(sp.nccl_first_warning);
	assert_int_equal(sp.nccl_burst_warnings, 1);
	assert_string_equal(sp.nccl_warning, "Comm 0x1 is in abort state");
	/* a WARN NCCL downgraded to INFO (empty in ncclLastError) is no part of it */
	warn(s, 11, 22 * SEC + 1000, "");
	nccl_state__proc_snap(s, &sp);
	assert_int_equal(sp.nccl_burst_warnings, 1);
	nccl_state__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warn_bursts),
	};

	return cmocka_run_group_tests_name("ncclstate", tests, NULL, NULL);
}
