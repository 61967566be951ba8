package com.example;

/** Where an application keeps reports. */
public interface ReportRepository {

	void write(Report report, long fencingToken);

	Report compute();

}
