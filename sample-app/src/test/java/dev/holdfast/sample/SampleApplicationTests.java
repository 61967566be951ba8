package dev.holdfast.sample;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

import static org.assertj.core.api.Assertions.assertThat;

@SpringBootTest
class SampleApplicationTests {

	@Autowired
	private InventoryService inventory;

	@Test
	void concurrentReservationsNeverOversell() throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(8);
		try {
			List<Future<Long>> results = new ArrayList<>();
			for (int i = 0; i < 150; i++) {
				results.add(pool.submit(() -> this.inventory.reserve("apple")));
			}
			long reserved = 0;
			for (Future<Long> result : results) {
				if (result.get() >= 0) {
					reserved++;
				}
			}
			assertThat(reserved).isEqualTo(100);
			assertThat(this.inventory.stock()).containsEntry("apple", 0);
		}
		finally {
			pool.shutdownNow();
		}
	}

}
