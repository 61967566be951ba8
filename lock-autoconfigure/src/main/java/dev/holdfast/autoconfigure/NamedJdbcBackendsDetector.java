package dev.holdfast.autoconfigure;

import java.util.Set;
import java.util.TreeSet;

import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitializationDetector;
import org.springframework.core.env.Environment;

/**
 * The jdbc backends of {@code holdfast.backends.<name>} depend on database initialization (Flyway,
 * Liquibase, SQL scripts), as the default jdbc backend's {@code @DependsOnDatabaseInitialization}
 * bean does: their lock table is checked when they are built.
 */
class NamedJdbcBackendsDetector implements DependsOnDatabaseInitializationDetector {

	@Override
	public Set<String> detect(ConfigurableListableBeanFactory beanFactory) {
		Set<String> found = new TreeSet<>();
		NamedBackend.configured(beanFactory.getBean(Environment.class)).forEach((name, spec) -> {
			String bean = NamedBackendsRegistrar.BACKEND_BEAN + name;
			if (spec.getType() == BackendType.JDBC && beanFactory.containsBeanDefinition(bean)) {
				found.add(bean);
			}
		});
		return found;
	}

}
