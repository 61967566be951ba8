package com.example;

import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.bean.override.mockito.MockitoBean;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.test.LockRecorder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.anyLong;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;

@SpringBootTest(properties = "holdfast.backend=memory")
@Import(LockRecorder.class)
public class CatalogRefreshTests {

	@Autowired
	CatalogRefresh refresh;

	@Autowired
	LockTemplate locks;

	@Autowired
	LockRecorder recorder;

	@MockitoBean
	Catalog catalog;

	@Test
	void refreshRunsUnderItsLock() {
		assertThat(refresh.refresh()).isTrue();
		assertThat(recorder).ranUnder("catalog-refresh");
		verify(catalog).reload(anyLong());
	}

	@Test
	void refreshIsSkippedWhileAnotherOwnerHoldsTheLock() {
		// Another thread holds the lock, as another instance would.
		try (Lease held = CompletableFuture
			.supplyAsync(() -> locks.acquire("catalog-refresh", null, LockOptions.defaults()))
			.join()) {
			assertThat(refresh.refresh()).isFalse();
			assertThat(recorder).wasNotAcquired("catalog-refresh", null);
			verify(catalog, never()).reload(anyLong());
		}
	}

}
